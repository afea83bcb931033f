import assert from "node:assert/strict";
import { test } from "node:test";
import { currentTool } from "../../src/chat/agents";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent } from "../../src/chat/model";
import type { TillerEvent } from "../../src/protocol";
import { eventMaker, only } from "./fixtures";

const ev = eventMaker();

/** An event of the child session `sessionId` (it carries the parent's turn). */
function childEvent(sessionId: string, event: TillerEvent): TillerEvent {
  return { ...event, sessionId, turnId: `turn-${sessionId}`, parentTurnId: "t1" } as TillerEvent;
}

function play(events: TillerEvent[], model: ChatModel = emptyChat(), now?: number): ChatModel {
  return events.reduce((m, e) => applyEvent(m, e, now), model);
}

const taskStarted = (id: string): TillerEvent =>
  ev({ type: "toolStarted", toolUseId: id, name: "task", input: { description: `look ${id}`, prompt: "p", subagent_type: "explore" }, batch: 0, concurrent: true, permission: { decision: "allow", by: "read-only" } });
const agentStarted = (id: string, child: string): TillerEvent =>
  ev({ type: "agentStarted", toolUseId: id, agentSessionId: child, agent: "explore", description: `look ${id}` });

test("a child's events nest under the task row that started it and never switch the chat", () => {
  const model = play(
    [
      ev({ type: "turnStarted", prompt: "explore" }),
      taskStarted("p1"),
      taskStarted("p2"),
      agentStarted("p1", "c1"),
      agentStarted("p2", "c2"),
      childEvent("c1", ev({ type: "turnStarted", prompt: "p" })),
      childEvent("c1", ev({ type: "textDelta", text: "child text" })),
      childEvent("c1", ev({ type: "toolStarted", toolUseId: "x1", name: "bash", input: { command: "sleep 1" }, batch: 0, concurrent: false })),
      childEvent("c2", ev({ type: "toolStarted", toolUseId: "y1", name: "grep", input: { pattern: "todo" }, batch: 0, concurrent: false })),
    ],
    emptyChat(),
    1000,
  );
  assert.equal(model.sessionId, "s1");
  assert.deepEqual(
    model.items.map((item) => item.kind),
    ["user", "tool", "tool"],
  ); // the child's text is in its own transcript, not in this chat
  const [first, second] = only(model, "tool");
  assert.equal(first?.agent?.turnId, "turn-c1"); // what a stop button interrupts
  assert.equal(first?.agent?.startedAt, 1000);
  assert.equal(currentTool(first!.agent!), "bash sleep 1");
  assert.equal(currentTool(second!.agent!), "grep todo");
});

test("a child's end shows its outcome and tokens; its task row's end settles what it left running", () => {
  const model = play(
    [
      ev({ type: "turnStarted", prompt: "explore" }),
      taskStarted("p1"),
      taskStarted("p2"),
      agentStarted("p1", "c1"),
      agentStarted("p2", "c2"),
      childEvent("c1", ev({ type: "toolStarted", toolUseId: "x1", name: "bash", input: { command: "sleep 1" }, batch: 0, concurrent: false })),
      childEvent("c1", ev({ type: "toolFinished", toolUseId: "x1", name: "bash", status: "ok", output: "", durationMs: 1001 })),
      childEvent("c1", ev({ type: "turnEnded", outcome: "completed", trail: [], usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 5, cacheWriteTokens: 0, costUsd: 0 } })),
      ev({ type: "toolFinished", toolUseId: "p1", name: "task", status: "ok", output: "report", durationMs: 1500 }),
      childEvent("c2", ev({ type: "toolStarted", toolUseId: "y1", name: "bash", input: { command: "sleep 30" }, batch: 0, concurrent: false })),
      ev({ type: "toolFinished", toolUseId: "p2", name: "task", status: "interrupted", output: "Interrupted by user", durationMs: 900 }),
    ],
    emptyChat(),
    2000,
  );
  const [first, second] = only(model, "tool");
  assert.equal(first?.agent?.status, "completed");
  assert.equal(first?.agent?.tokens, 125);
  assert.deepEqual(first?.agent?.calls.map((c) => [c.name, c.status, c.durationMs]), [["bash", "ok", 1001]]);
  assert.equal(second?.agent?.status, "interrupted");
  assert.equal(currentTool(second!.agent!), undefined); // nothing stays running
});

test("an event of a child the chat never saw start changes nothing", () => {
  const before = play([ev({ type: "turnStarted", prompt: "x" })]);
  const after = applyEvent(before, childEvent("unknown", ev({ type: "toolStarted", toolUseId: "z", name: "bash", input: {}, batch: 0, concurrent: false })));
  assert.equal(after, before);
});

test("a redrawn task row shows its child ended as the row did", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "explore" }),
    taskStarted("p1"),
    agentStarted("p1", "c1"),
    ev({ type: "toolFinished", toolUseId: "p1", name: "task", status: "ok", output: "report", durationMs: 1500 }),
  ]);
  const [row] = only(model, "tool");
  assert.equal(row?.agent?.status, "completed");
});

test("a task row left running when the server goes idle stops its child's view too", () => {
  const running = play([ev({ type: "turnStarted", prompt: "explore" }), taskStarted("p1"), agentStarted("p1", "c1")]);
  const idle = applyEvent(running, ev({ type: "turnEnded", outcome: "interrupted", trail: [] }));
  const [row] = only(idle, "tool");
  assert.equal(row?.agent?.status, "interrupted");
});
