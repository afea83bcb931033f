import assert from "node:assert/strict";
import { test } from "node:test";
import { slashHint, slashMatches } from "../../src/chat/slash";
import type { CommandListItem } from "../../src/protocol";

const listed: CommandListItem[] = [
  { name: "help", description: "this list", source: "built-in" },
  { name: "review", description: "Review a file", argumentHint: "<file>", source: "project: /ws/.claude/commands/review.md" },
  { name: "resume", description: "resume a session", argumentHint: "<id>", source: "built-in" },
];

test("typing a slash lists the built-in and custom commands that start with it", () => {
  assert.deepEqual(slashMatches(listed, "/re").map((c) => c.name), ["review", "resume"]);
  assert.deepEqual(slashMatches(listed, "/").length, 3);
  assert.deepEqual(slashMatches(listed, "/review app.py"), []);
  assert.deepEqual(slashMatches(listed, "hello"), []);
});

test("a hint names the arguments, the description, and a custom command", () => {
  assert.equal(slashHint(listed[1]!), "/review <file> — Review a file (custom)");
  assert.equal(slashHint(listed[0]!), "/help — this list");
});
