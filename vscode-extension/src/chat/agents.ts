// Subagents in the chat: a `task` tool row carries the child session it started (its
// `agentStarted` event), and the child's events (they carry `parentTurnId`) update that nested
// view: its calls, its current tool, its time, its tokens once it ends. Pure, like model.ts.
import type { AgentStartedEvent, Outcome, TillerEvent, ToolStatus, Usage } from "../protocol";

export interface AgentCall {
  toolUseId: string;
  name: string;
  summary: string;
  status: "running" | ToolStatus;
  durationMs?: number;
}

export interface AgentView {
  sessionId: string;
  name: string;
  description: string;
  /** The child's turn: `tiller/interrupt` with it stops this child alone. */
  turnId?: string;
  status: "running" | Outcome;
  calls: AgentCall[];
  /** Wall-clock ms when it started here (live only: drives the elapsed timer). */
  startedAt?: number;
  durationMs?: number;
  /** Tokens read and written, once it ended. */
  tokens?: number;
}

export function startedAgent(event: AgentStartedEvent, now?: number): AgentView {
  return {
    sessionId: event.agentSessionId,
    name: event.agent,
    description: event.description,
    status: "running",
    calls: [],
    ...(now !== undefined ? { startedAt: now } : {}),
  };
}

export function usageTokens(usage: Usage): number {
  return usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.outputTokens;
}

/** One event of the child applied to its view (`summarize`: a call's input in a few words). */
export function applyChildEvent(
  agent: AgentView,
  event: TillerEvent,
  summarize: (name: string, input: unknown) => string,
  now?: number,
): AgentView {
  switch (event.type) {
    case "turnStarted":
      return { ...agent, turnId: event.turnId ?? undefined };
    case "toolStarted": {
      const call: AgentCall = { toolUseId: event.toolUseId, name: event.name, summary: summarize(event.name, event.input), status: "running" };
      return { ...agent, calls: [...agent.calls.filter((c) => c.toolUseId !== event.toolUseId), call] };
    }
    case "toolFinished":
      return {
        ...agent,
        calls: agent.calls.map((c) => (c.toolUseId === event.toolUseId ? { ...c, status: event.status, durationMs: event.durationMs } : c)),
      };
    case "turnEnded":
      return {
        ...settled(agent, "interrupted", now),
        status: event.outcome,
        ...(event.usage !== undefined ? { tokens: usageTokens(event.usage) } : {}),
      };
    default:
      return agent;
  }
}

/** The outcome a `task` row's status says its child had (its end was not seen: a redraw, a
 *  crash). */
export function outcomeOf(status: ToolStatus): Outcome {
  return status === "ok" ? "completed" : status === "interrupted" ? "interrupted" : "failed";
}

/** A child whose end was not seen (its task call ended first, a crash): nothing stays running. */
export function settled(agent: AgentView, status: Outcome, now?: number): AgentView {
  const durationMs = agent.durationMs ?? (agent.startedAt !== undefined && now !== undefined ? Math.max(0, now - agent.startedAt) : undefined);
  return {
    ...agent,
    status: agent.status === "running" ? status : agent.status,
    calls: agent.calls.map((c) => (c.status === "running" ? { ...c, status: "interrupted" } : c)),
    ...(durationMs !== undefined ? { durationMs } : {}),
  };
}

/** What the child is doing now: its last running call, in a few words. */
export function currentTool(agent: AgentView): string | undefined {
  const running = agent.calls.filter((c) => c.status === "running").at(-1);
  return running === undefined ? undefined : `${running.name} ${running.summary}`.trim();
}
