import assert from "node:assert/strict";
import { test } from "node:test";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent } from "../../src/chat/model";
import { summarizePreview } from "../../src/chat/words";
import { notificationFor } from "../../src/notifyText";
import { ruleDescription, rulesByScope } from "../../src/permissionsText";
import type { Rule as RuleWire, TillerEvent } from "../../src/protocol";
import { eventMaker, only } from "./fixtures";

const ev = eventMaker();

function play(events: TillerEvent[], model: ChatModel = emptyChat()): ChatModel {
  return events.reduce(applyEvent, model);
}

test("every tool row names what decided it: the rule and its file, or the mode", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "go" }),
    ev({
      type: "toolStarted",
      toolUseId: "t1",
      name: "bash",
      input: { command: "git diff" },
      batch: 0,
      concurrent: false,
      permission: { decision: "allow", by: "rule: Bash(git diff:*) (workspace .claude/settings.json)" },
    }),
    ev({ type: "toolStarted", toolUseId: "t2", name: "bash", input: { command: "rm x" }, batch: 1, concurrent: false, permission: { decision: "ask", by: "mode default" } }),
  ]);
  assert.deepEqual(
    only(model, "tool").map((tool) => tool.decidedBy),
    ["allow: rule: Bash(git diff:*) (workspace .claude/settings.json)", "ask: mode default"],
  );
});

test("the approval card keeps how the command was split and which rule matched each part", () => {
  const preview = summarizePreview({
    kind: "command",
    command: "git status && rm -rf ./tmp",
    cwd: "/ws",
    segments: [
      { text: "git status", decision: "allow", rule: "rule: Bash(git status:*) (local .tiller/settings.local.json)" },
      { text: "rm -rf ./tmp", decision: "mode" },
      { text: 3, decision: "allow" },
    ],
  });
  assert.deepEqual(preview, {
    kind: "command",
    command: "git status && rm -rf ./tmp",
    cwd: "/ws",
    segments: [
      { text: "git status", decision: "allow", rule: "rule: Bash(git status:*) (local .tiller/settings.local.json)" },
      { text: "rm -rf ./tmp", decision: "mode" },
    ],
  });
});

test("a steer delivered to the model is shown where it landed", () => {
  const model = play([ev({ type: "turnStarted", prompt: "go" }), ev({ type: "steered", text: "use tabs" })]);
  assert.deepEqual(
    only(model, "notice").map((notice) => notice.text),
    ["Steered: use tabs"],
  );
});

test("notifications say a question waits or a turn finished, and nothing else", () => {
  assert.equal(notificationFor(ev({ type: "confirmRequested", toolUseId: "t", name: "bash", preview: { kind: "command" } })), "Tiller needs your answer: allow bash?");
  assert.equal(notificationFor(ev({ type: "planRequested", plan: "p" })), "Tiller needs your answer: a plan to approve.");
  assert.equal(notificationFor(ev({ type: "turnEnded", outcome: "completed", trail: [] })), "Tiller finished the turn.");
  assert.equal(notificationFor(ev({ type: "turnEnded", outcome: "failed", trail: [] })), "Tiller's turn ended: failed.");
  assert.equal(notificationFor(ev({ type: "textDelta", text: "x" })), undefined);
});

test("the Permissions view groups rules by scope, most specific first", () => {
  const rules: RuleWire[] = [
    { effect: "allow", rule: "Bash(make:*)", scope: "user", source: "~/.claude/settings.json" },
    { effect: "deny", rule: "Bash(rm:*)", scope: "workspace", source: ".claude/settings.json" },
    { effect: "allow", rule: "Bash(touch a)", scope: "session", source: "session" },
  ];
  assert.deepEqual(
    rulesByScope(rules).map((group) => [group.scope, group.rules.map((rule) => rule.rule)]),
    [
      ["session", ["Bash(touch a)"]],
      ["workspace", ["Bash(rm:*)"]],
      ["user", ["Bash(make:*)"]],
    ],
  );
  assert.equal(ruleDescription(rules[1] as RuleWire), "deny · .claude/settings.json");
  assert.equal(ruleDescription(rules[2] as RuleWire), "allow");
});
