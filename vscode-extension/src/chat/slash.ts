// Slash commands in the chat input: which listed commands match what is typed, and how a hint
// reads. Pure, shared by the webview.
import type { CommandListItem } from "../protocol";

/** The commands whose `/name` starts with `text` (a `/word` with no space yet). */
export function slashMatches(commands: readonly CommandListItem[], text: string): CommandListItem[] {
  if (!text.startsWith("/") || /\s/.test(text)) return [];
  return commands.filter((command) => `/${command.name}`.startsWith(text));
}

/** `/review <file> — Review a file (custom)`. */
export function slashHint(command: CommandListItem): string {
  const hint = command.argumentHint !== undefined ? ` ${command.argumentHint}` : "";
  const custom = command.source === "built-in" ? "" : " (custom)";
  return `/${command.name}${hint} — ${command.description}${custom}`;
}
