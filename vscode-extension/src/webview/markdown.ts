// Markdown → sanitized HTML for the chat: markdown-it with raw HTML off, highlight.js for code,
// then DOMPurify. Images never load from the network: a remote image becomes a link (a URL in
// model output could carry data out); only inline `data:` images render.
import createDOMPurify, { type WindowLike } from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

export type RenderMarkdown = (text: string) => string;

const LANGUAGES = { bash, c, cpp, css, diff, go, ini, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["rs"], { languageName: "rust" });

/** Blocks longer than this are not highlighted (it would stall the chat); auto-detection is
 *  tried only on short blocks without a language. */
const HIGHLIGHT_MAX_CHARS = 100_000;
const DETECT_MAX_CHARS = 4_000;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch);
}

export function highlight(code: string, lang: string): string {
  if (code.length > HIGHLIGHT_MAX_CHARS) return "";
  const language = lang.trim().toLowerCase();
  try {
    if (language !== "" && hljs.getLanguage(language) !== undefined) {
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    }
    if (language === "" && code.length <= DETECT_MAX_CHARS) {
      const found = hljs.highlightAuto(code);
      return found.relevance >= 5 ? found.value : "";
    }
  } catch {
    // fall through: plain text
  }
  return "";
}

/** A renderer bound to a DOM window (the webview's, or jsdom's in tests). */
export function createMarkdownRenderer(window: WindowLike): RenderMarkdown {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: false, highlight });
  md.renderer.rules.image = (tokens, index) => {
    const token = tokens[index]!;
    const src = token.attrGet("src") ?? "";
    const alt = token.content !== "" ? token.content : "image";
    if (/^data:image\//i.test(src)) {
      return `<img src="${escapeHtml(src)}" alt="${escapeHtml(alt)}">`;
    }
    return `<a class="image-link" href="${escapeHtml(src)}" title="Image not loaded: ${escapeHtml(src)}">[image: ${escapeHtml(alt)}]</a>`;
  };
  const purify = createDOMPurify(window);
  purify.addHook("afterSanitizeAttributes", (node) => {
    if (node.nodeName === "IMG" && !/^data:image\//i.test(node.getAttribute("src") ?? "")) {
      node.removeAttribute("src");
    }
  });
  return (text) =>
    purify.sanitize(md.render(text), {
      USE_PROFILES: { html: true },
      FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "video", "audio", "source", "picture"],
      FORBID_ATTR: ["style", "srcset"],
    });
}
