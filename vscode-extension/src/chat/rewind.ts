// "Rewind to here": a dry run shows what a rewind to before a prompt would change (which files,
// and which of them the user edited since), the user picks what goes back (files, conversation
// or both), and the server rewinds. The transcript's "rewound" entry then says what happened
// and carries the undo.
import * as vscode from "vscode";
import type { TillerServer } from "../server";
import type { ChatItem } from "./items";
import { fileEffects } from "./words";

/** Asks, then rewinds to before turn `turnId` (whose prompt is `prompt`); false if the user
 *  declined. */
export async function askAndRewind(server: TillerServer, turnId: string, prompt: string): Promise<boolean> {
  const preview = await server.request("tiller/rewind", { turnId, files: true, conversation: true, dryRun: true });
  const files = [...preview.reverted, ...preview.deleted, ...preview.restored];
  const listed = files.slice(0, 15).join("\n") + (files.length > 15 ? `\n… and ${files.length - 15} more` : "");
  const yours = preview.userChanged ?? [];
  const detail = [
    files.length === 0 ? "No file changed since this prompt." : `Files back to how they were before this prompt (${fileEffects(preview)}):\n${listed}`,
    yours.length > 0 ? `You changed ${yours.length} of them yourself since; those changes are undone too: ${yours.join(", ")}` : "",
    "The conversation continues from before this prompt. You can undo the rewind.",
  ]
    .filter(Boolean)
    .join("\n\n");
  const both = "Rewind Files and Conversation";
  const filesOnly = "Files Only";
  const talkOnly = "Conversation Only";
  const choice = await vscode.window.showWarningMessage(`Rewind to before “${prompt}”?`, { modal: true, detail }, both, filesOnly, talkOnly);
  if (choice === undefined) return false;
  await server.request("tiller/rewind", { turnId, files: choice !== talkOnly, conversation: choice !== filesOnly });
  return true;
}

/** The first line of turn `turnId`'s prompt, shortened to 60 characters, as the question names it. */
export function promptLine(items: readonly ChatItem[], turnId: string): string {
  const item = items.find((candidate) => candidate.kind === "user" && candidate.turnId === turnId);
  const text = item !== undefined && item.kind === "user" ? item.text.split("\n")[0] ?? "" : "this prompt";
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
