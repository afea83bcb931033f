// The before/after of edits, so that a finished edit's row opens its diff later: as the server
// kept it (`tiller/edit`), else as known here (a confirmation's preview, an edit_file's input).
import * as vscode from "vscode";
import type { DiffContents } from "../diffView";
import type { TillerEvent } from "../protocol";
import type { TillerServer } from "../server";

/** The before/after of an edit, kept in memory so its row can open the diff later. */
export interface EditTexts {
  path: string;
  before: string;
  after: string;
}

const EDITS_KEPT = 200;

/** A tool call's start, live (`toolStarted`) or from a transcript entry (its fields unchecked). */
type StartedCall = TillerEvent | { type: string; toolUseId?: unknown; name?: unknown; input?: unknown };

/** The last `EDITS_KEPT` edits' texts as known here, and the diff they open. */
export class EditMemory {
  private readonly edits = new Map<string, EditTexts>();

  constructor(
    private readonly server: TillerServer,
    private readonly diffs: DiffContents,
  ) {}

  /** Keeps the before/after of a proposed edit (from its confirmation preview). */
  remember(toolUseId: string, texts: EditTexts): void {
    this.edits.set(toolUseId, texts);
    while (this.edits.size > EDITS_KEPT) {
      const oldest = this.edits.keys().next().value;
      if (oldest === undefined) break;
      this.edits.delete(oldest);
    }
  }

  /** An edit's texts from its input (edit_file's old/new strings), for a server that keeps none. */
  noteStarted(event: StartedCall): void {
    if (event.type !== "toolStarted" || !("input" in event) || typeof event.input !== "object" || event.input === null) return;
    const toolUseId = typeof event.toolUseId === "string" ? event.toolUseId : "";
    if (toolUseId === "" || this.edits.has(toolUseId)) return;
    const input = event.input as Record<string, unknown>;
    const path = typeof input.path === "string" ? input.path : "";
    if (event.name === "edit_file" && typeof input.old_string === "string" && typeof input.new_string === "string") {
      this.remember(toolUseId, { path, before: input.old_string, after: input.new_string });
    }
    // A write_file's before is not in its input: the server keeps it (tiller/edit).
  }

  /** Opens the before/after of a finished edit: as the server kept it, else as known here. */
  async open(toolUseId: string): Promise<void> {
    const kept = await this.server.request("tiller/edit", { toolUseId }).catch(() => undefined);
    if (kept !== undefined) {
      const title = kept.complete ? "edit — Tiller" : "edit — Tiller (cut at 256 KB)";
      await this.diffs.show(toolUseId, kept.path, kept.before ?? "", kept.after, title, false);
      return;
    }
    const texts = this.edits.get(toolUseId);
    if (texts === undefined) {
      void vscode.window.showInformationMessage("Tiller: the before/after of this edit is not available any more.");
      return;
    }
    await this.diffs.show(toolUseId, texts.path, texts.before, texts.after, "edit — Tiller", false);
  }
}
