// Markdown → sanitized HTML for the chat. markdown-it with raw HTML off, then DOMPurify.
import createDOMPurify, { type WindowLike } from "dompurify";
import MarkdownIt from "markdown-it";

export type RenderMarkdown = (text: string) => string;

/** A renderer bound to a DOM window (the webview's, or jsdom's in tests). */
export function createMarkdownRenderer(window: WindowLike): RenderMarkdown {
  const markdown = new MarkdownIt({ html: false, linkify: true, breaks: false });
  const purify = createDOMPurify(window);
  return (text) =>
    purify.sanitize(markdown.render(text), {
      USE_PROFILES: { html: true },
      FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"],
      FORBID_ATTR: ["style"],
    });
}
