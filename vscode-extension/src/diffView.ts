// Before/after texts shown in VS Code's diff editor: proposed edits (while the user decides)
// and finished edits (from the chat's `+12 −3`). Texts live only in memory.
import * as vscode from "vscode";

export const DIFF_SCHEME = "tiller-diff";

/** Serves the before/after texts to the diff editor. */
export class DiffContents implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this);

  add(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
  }

  remove(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** Opens before ↔ after; returns a function that closes the tab again. */
  async show(id: string, file: string, before: string, after: string, title: string, preserveFocus = true): Promise<() => Promise<void>> {
    const name = file.replace(/^\/+/, "");
    const left = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${id}/before/${name}` });
    const right = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${id}/after/${name}` });
    this.add(left, before);
    this.add(right, after);
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (${title})`, { preview: true, preserveFocus });
    return async () => {
      const tabs = vscode.window.tabGroups.all
        .flatMap((group) => group.tabs)
        .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === right.toString());
      await vscode.window.tabGroups.close(tabs, true);
      this.remove(left);
      this.remove(right);
    };
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}
