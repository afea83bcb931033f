// Status bar text from a State. Pure: no vscode import, so it is unit-tested.
import type { Mode, State } from "./protocol";

export const MODE_LABELS: Record<Mode, string> = {
  default: "ask before edits",
  acceptEdits: "accept edits",
  plan: "plan",
};

export const SPINNER = "$(sync~spin)";

/** Shortens model ids for the status bar: "claude-sonnet-4-5-20250929" → "claude-sonnet-4-5". */
export function shortModel(model: string): string {
  return model.replace(/-\d{8}$/, "");
}

/** `mode · model · active todo (done/total)`, with a spinner while busy. */
export function statusText(state: State): string {
  const parts = [MODE_LABELS[state.mode], shortModel(state.model)];
  const { completed, total } = state.todoCounts;
  if (total > 0) {
    const counts = `(${completed}/${total})`;
    parts.push(state.activeTodo !== null && state.activeTodo !== "" ? `${state.activeTodo} ${counts}` : counts);
  }
  if (state.queue.length > 0) {
    parts.push(`${state.queue.length} queued`);
  }
  const text = parts.join(" · ");
  return state.busy ? `${SPINNER} ${text}` : `$(compass) ${text}`;
}

export function statusTooltip(state: State, provider?: "anthropic" | "scripted" | "demo"): string {
  const model =
    provider === "demo"
      ? `${state.model} — offline demo: no API key (run "Tiller: Set API Key…")`
      : provider === "scripted"
        ? `${state.model} — scripted (tiller.demoScript)`
        : state.model;
  const lines = [
    `Tiller — mode: ${MODE_LABELS[state.mode]} (click to cycle)`,
    `model: ${model}`,
    `thinking: ${state.thinking.enabled ? `on (${state.thinking.budgetTokens} tokens)` : "off"}`,
    `session: ${state.sessionId}`,
  ];
  if (state.busy) {
    lines.push(`working… ${state.toolsUsed} tool call(s) this turn`);
  }
  return lines.join("\n");
}
