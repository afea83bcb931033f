// The @-picker (commit 6ac23f5): the files and folders are sent at once, the workspace's symbols
// in a second answer to the same query when the language servers answer, appended to what is
// shown with the selection kept. The host's answering (chat/mentionAnswers.ts) drives the
// webview's picker (webview/attach.ts) in jsdom, as the chat wires them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JSDOM } from "jsdom";
import type { Mention } from "../../src/chat/attachments";
import { answerMentionQuery, type MentionSource, type MentionsAnswer } from "../../src/chat/mentionAnswers";
import type { FromWebview } from "../../src/chat/messages";
import { Composer } from "../../src/webview/attach";

const FILES: Mention[] = [
  { kind: "file", label: "src/app.ts", path: "src/app.ts" },
  { kind: "file", label: "src/apply.ts", path: "src/apply.ts" },
];
const SYMBOL: Mention = { kind: "symbol", label: "applyPatch", path: "src/apply.ts", startLine: 3, endLine: 9 };

/** A symbol source that answers only when the test says so (a language server still busy). */
function slowSymbols(): { source: MentionSource; answer: () => void; asked: Promise<void> } {
  let answer = (): void => undefined;
  let asked = (): void => undefined;
  const askedPromise = new Promise<void>((resolve) => (asked = resolve));
  const source: MentionSource = {
    query: async () => FILES,
    withSymbols: (_query, entries) => {
      asked();
      return new Promise((resolve) => (answer = () => resolve([...entries, SYMBOL])));
    },
  };
  return { source, answer: () => answer(), asked: askedPromise };
}

test("the @-picker's files are sent at once, without waiting for the symbols", async () => {
  const { source, answer, asked } = slowSymbols();
  const answers: MentionsAnswer[] = [];
  const done = answerMentionQuery(source, "ap", 7, (sent) => answers.push(sent));
  await asked;
  assert.deepEqual(answers, [{ type: "mentions", requestId: 7, items: FILES }], "the files went before the symbols answered");
  answer();
  await done;
  assert.deepEqual(answers[1], { type: "mentions", requestId: 7, items: [...FILES, SYMBOL] }, "the symbols follow in a second answer to the same query");
});

test("with no symbols to add there is one answer", async () => {
  const answers: MentionsAnswer[] = [];
  await answerMentionQuery({ query: async () => FILES, withSymbols: async () => undefined }, "ap", 1, (sent) => answers.push(sent));
  assert.deepEqual(answers, [{ type: "mentions", requestId: 1, items: FILES }]);
});

test("in the webview the symbols are added after the files shown, and the selection stays", async () => {
  const dom = new JSDOM('<form><textarea id="input"></textarea></form>');
  globalThis.document = dom.window.document;
  const input = dom.window.document.getElementById("input") as HTMLTextAreaElement;
  const posted: FromWebview[] = [];
  const composer = new Composer(input, (message) => posted.push(message));
  const picker = dom.window.document.getElementById("mention-picker") as HTMLElement;
  const rows = (): string[] => Array.from(picker.querySelectorAll(".mention-option")).map((row) => `${row.classList.contains("selected") ? ">" : " "}${row.textContent ?? ""}`);

  input.value = "see @ap";
  input.setSelectionRange(7, 7);
  input.dispatchEvent(new dom.window.Event("input"));
  const query = posted.at(-1);
  assert.ok(query?.type === "mentionQuery" && query.query === "ap", JSON.stringify(query));

  const { source, answer, asked } = slowSymbols();
  const done = answerMentionQuery(source, query.query, query.requestId, (sent) => composer.showMentions(sent.requestId, sent.items));
  await asked;
  assert.deepEqual(rows(), [">filesrc/app.ts", " filesrc/apply.ts"]);
  input.dispatchEvent(new dom.window.KeyboardEvent("keydown", { key: "ArrowDown" }));
  assert.deepEqual(rows(), [" filesrc/app.ts", ">filesrc/apply.ts"]);

  answer();
  await done;
  assert.deepEqual(rows(), [" filesrc/app.ts", ">filesrc/apply.ts", " symbolapplyPatch — src/apply.ts:3"]);

  // An answer to an older query is not shown.
  composer.showMentions(query.requestId - 1, [SYMBOL]);
  assert.equal(rows().length, 3);
});
