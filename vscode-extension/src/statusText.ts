// Status bar text from a State. Pure: no vscode import, so it is unit-tested.
import type { ProviderKind } from "./chat/items";
import { formatCost, formatTokens, MODE_WORDS, plural, thinkingWords } from "./chat/words";
import type { Mode, State } from "./protocol";
import { trustTooltipLine } from "./trustText";

export const MODE_LABELS: Record<Mode, string> = MODE_WORDS;

export const MODE_DESCRIPTIONS: Record<Mode, string> = {
  default: "asks before every edit and command",
  acceptEdits: "edits without asking; commands still ask",
  plan: "read-only until you approve a plan",
};

/** `12k/200k · $0.03`, "" until the server sends them. */
export function usageSuffix(state: State): string {
  const parts: string[] = [];
  if (state.context !== undefined && state.context !== null && state.context.windowTokens > 0 && state.context.usedTokens > 0) {
    parts.push(`${formatTokens(state.context.usedTokens)}/${formatTokens(state.context.windowTokens)}`);
  }
  if (typeof state.sessionCostUsd === "number" && state.sessionCostUsd > 0) {
    parts.push(formatCost(state.sessionCostUsd));
  }
  return parts.join(" · ");
}

export const SPINNER = "$(sync~spin)";

/** Shortens model ids for the status bar: "claude-sonnet-4-5-20250929" → "claude-sonnet-4-5". */
export function shortModel(model: string): string {
  return model.replace(/-\d{8}$/, "");
}

/** What the status bar says in place of the model when no model answers: the bundled offline
 *  demo (no API key) or a script of `tiller.demoScript`. */
export const PROVIDER_WORDS: Partial<Record<ProviderKind, string>> = {
  demo: "offline demo",
  scripted: "scripted model",
};

/** `mode · model · active todo (done/total)`, with a spinner while busy; the offline demo (or a
 *  script) is said in the model's place, since no model answers then. */
export function statusText(state: State, provider?: ProviderKind): string {
  const parts = [MODE_LABELS[state.mode], (provider !== undefined ? PROVIDER_WORDS[provider] : undefined) ?? shortModel(state.model)];
  const { completed, total } = state.todoCounts;
  if (total > 0) {
    const counts = `(${completed}/${total})`;
    // Only a running turn works on a todo: after an interrupted one nothing is "in progress".
    const active = state.busy && state.activeTodo !== null && state.activeTodo !== "" ? state.activeTodo : "";
    parts.push(active !== "" ? `${active} ${counts}` : counts);
  }
  if (state.queue.length > 0) {
    parts.push(`${state.queue.length} queued`);
  }
  const usage = usageSuffix(state);
  if (usage !== "") {
    parts.push(usage);
  }
  const text = parts.join(" · ");
  return state.busy ? `${SPINNER} ${text}` : `$(compass) ${text}`;
}

export function statusTooltip(state: State, provider?: ProviderKind): string {
  const model =
    provider === "demo"
      ? `${state.model} — offline demo: no API key (run "Tiller: Set API Key…")`
      : provider === "scripted"
        ? `${state.model} — scripted (tiller.demoScript)`
        : state.model;
  const lines = [
    `Tiller — mode: ${MODE_LABELS[state.mode]} (click to cycle)`,
    `model: ${model}`,
    `thinking: ${thinkingWords(state.thinking)}`,
    `session: ${state.sessionId}`,
  ];
  if (state.context !== undefined && state.context !== null) {
    lines.push(`context: ${state.context.usedTokens} of ${state.context.windowTokens} tokens`);
  }
  if (typeof state.sessionCostUsd === "number") {
    lines.push(`session cost: ${formatCost(state.sessionCostUsd)}`);
  }
  if (state.sandbox !== undefined) {
    lines.push(`commands sandboxed: ${state.sandbox === "bwrap" ? "yes (bubblewrap)" : "no"}`);
  }
  const trust = trustTooltipLine(state.workspaceTrust);
  if (trust !== undefined) {
    lines.push(trust);
  }
  if (state.busy) {
    lines.push(`working… ${plural(state.toolsUsed, "tool call")} this turn`);
  }
  return lines.join("\n");
}
