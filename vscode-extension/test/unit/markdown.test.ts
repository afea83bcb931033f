import assert from "node:assert/strict";
import { test } from "node:test";
import type { WindowLike } from "dompurify";
import { JSDOM } from "jsdom";
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
