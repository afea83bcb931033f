import assert from "node:assert/strict";
import { test } from "node:test";
import {
  activeEditorLabel,
  chipLabel,
  fuzzyScore,
  imageProblem,
  isMention,
  isPastedImage,
  MAX_IMAGE_BYTES,
  mentionAt,
  rankMentions,
  sniffImage,
} from "../../src/chat/attachments";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent, fromTranscript } from "../../src/chat/model";
import type { TillerEvent } from "../../src/protocol";
import { eventMaker, only } from "./fixtures";

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

test("an @ after a space or at the start opens a query; an @ inside a word does not", () => {
  assert.deepEqual(mentionAt("look at @src/ap", 15), { start: 8, query: "src/ap" });
  assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
  assert.equal(mentionAt("mail me@example.com", 19), undefined);
  assert.equal(mentionAt("@done and more", 14), undefined);
});

test("fuzzy ranking prefers the file name, consecutive letters and short paths", () => {
  const files = ["src/chat/provider.ts", "src/webview/main.ts", "test/unit/provider.test.ts", "docs/protocol.md"];
  assert.deepEqual(rankMentions("prov", files, (f) => f, 2), ["src/chat/provider.ts", "test/unit/provider.test.ts"]);
  assert.deepEqual(rankMentions("main", files, (f) => f, 1), ["src/webview/main.ts"]);
  assert.equal(fuzzyScore("zzz", "src/main.ts"), -1);
  assert.ok(fuzzyScore("", "a.ts") > fuzzyScore("", "a/much/longer/path.ts"));
});

test("images are recognised by their magic bytes and bounded by the API's 5 MB of base64", () => {
  assert.equal(sniffImage(PNG), "image/png");
  assert.equal(sniffImage(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg");
  assert.equal(sniffImage(new TextEncoder().encode("GIF89a....")), "image/gif");
  assert.equal(sniffImage(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 ")), "image/webp");
  assert.equal(sniffImage(new TextEncoder().encode("BM not an image we take")), undefined);
  assert.equal(imageProblem("a.png", PNG), undefined);
  assert.match(imageProblem("a.bmp", new TextEncoder().encode("BM...")) ?? "", /not a PNG, JPEG, GIF or WebP/);
  const huge = new Uint8Array(MAX_IMAGE_BYTES + 1);
  huge.set(PNG);
  assert.match(imageProblem("big.png", huge) ?? "", /images up to 3\.8 MB/);
});

test("chips read what they attach", () => {
  assert.equal(chipLabel({ kind: "file", label: "src/a.ts", path: "src/a.ts" }), "@src/a.ts");
  assert.equal(chipLabel({ kind: "folder", label: "src", path: "src" }), "@src/");
  assert.equal(chipLabel({ kind: "symbol", label: "main", path: "src/a.ts", startLine: 3, endLine: 9 }), "@main (src/a.ts:3)");
  assert.equal(chipLabel({ kind: "problems", label: "problems" }), "@problems");
  assert.equal(activeEditorLabel({ path: "src/a.ts" }), "a.ts");
  assert.equal(activeEditorLabel({ path: "src/a.ts", startLine: 3, endLine: 9 }), "a.ts:3-9");
  assert.equal(activeEditorLabel({ path: "src/a.ts", startLine: 4, endLine: 4 }), "a.ts:4");
});

test("what the webview sends is checked before it is used", () => {
  assert.ok(isMention({ kind: "file", label: "a", path: "a" }));
  assert.ok(isMention({ kind: "diff", label: "diff" }));
  assert.ok(!isMention({ kind: "file", label: "a" }));
  assert.ok(!isMention({ kind: "secrets", label: "x" }));
  assert.ok(!isMention({ kind: "symbol", label: "m", path: "a", startLine: "1", endLine: 2 }));
  assert.ok(isPastedImage({ name: "a.png", mediaType: "image/png", data: "AAAA" }));
  assert.ok(!isPastedImage({ name: "a.bmp", mediaType: "image/bmp", data: "AAAA" }));
});

test("a prompt's attachments and a file tool's line reach the chat, live and redrawn alike", () => {
  const ev = eventMaker();
  const events: TillerEvent[] = [
    ev({ type: "turnStarted", prompt: "look", attachments: [{ kind: "file", name: "a.ts", bytes: 10 }, { kind: "image", name: "s.png", mediaType: "image/png", thumbnail: "data:image/png;base64,AAAA" }] }),
    ev({ type: "toolStarted", toolUseId: "e1", name: "edit_file", input: { path: "a.ts", old_string: "x", new_string: "y" }, batch: 0, concurrent: false }),
    ev({ type: "toolFinished", toolUseId: "e1", name: "edit_file", status: "ok", output: "Edited", durationMs: 1, diff: { added: 1, removed: 1 }, line: 7 }),
    ev({ type: "toolStarted", toolUseId: "r1", name: "read_file", input: { path: "b.ts", offset: 40 }, batch: 0, concurrent: false }),
    ev({ type: "toolStarted", toolUseId: "b1", name: "bash", input: { command: "ls" }, batch: 0, concurrent: false }),
  ];
  const live = events.reduce((model: ChatModel, event) => applyEvent(model, event), emptyChat());
  const user = only(live, "user")[0];
  assert.deepEqual(user?.attachments?.map((a) => a.name), ["a.ts", "s.png"]);
  const tools = only(live, "tool");
  assert.deepEqual(tools.map((t) => t.file), [{ path: "a.ts", line: 7 }, { path: "b.ts", line: 40 }, undefined]);
  const entries = events.map((event) => {
    const { type, sessionId: _s, ...rest } = event as TillerEvent & Record<string, unknown>;
    return { ...rest, kind: type };
  });
  const redrawn = fromTranscript("s1", entries, false);
  assert.deepEqual(only(redrawn, "user")[0]?.attachments, user?.attachments);
  assert.deepEqual(only(redrawn, "tool").map((t) => t.file), tools.map((t) => t.file));
});
