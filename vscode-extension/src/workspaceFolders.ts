// The editor's workspace folders as the server names their files (see roots.ts).
import { existsSync } from "node:fs";
import * as vscode from "vscode";
import { resolveShown, shownPath, type Folder } from "./roots";

/** Every workspace folder on disk, the first (the server's primary root) first. */
export function folders(): Folder[] {
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((folder) => folder.uri.scheme === "file")
    .map((folder) => ({ name: folder.name, fsPath: folder.uri.fsPath }));
}

/** A file as tool results and mentions show it: relative, folder-qualified or absolute. */
export function shownOf(uri: vscode.Uri): string {
  return shownPath(folders(), uri.fsPath, existsSync);
}

/** The file a shown path names (a folder-qualified path: in that folder). */
export function uriOfShown(shown: string): vscode.Uri {
  return vscode.Uri.file(resolveShown(folders(), shown, existsSync));
}
