// VS Code keeps the Workspace Trust; the server hears it. Each start passes `isTrusted` in the
// initialization options (server.ts); a grant while the server runs is sent at once as
// `tiller/setWorkspaceTrust` (no restart), and again after a start that raced the grant.
import * as vscode from "vscode";
import { errorMessage, type WorkspaceTrust } from "./protocol";
import type { TillerServer } from "./server";
import { trustToTell } from "./trustText";

export function tellWorkspaceTrust(server: TillerServer, log: vscode.LogOutputChannel): vscode.Disposable {
  const tell = (serverTrust: WorkspaceTrust | undefined): void => {
    const params = trustToTell(vscode.workspace.isTrusted, serverTrust);
    if (params === undefined) return;
    server.request("tiller/setWorkspaceTrust", params).then(
      (trust) => log.info(`Workspace trust: ${trust.trusted ? "trusted" : "not trusted"} (${trust.by})`),
      (error: unknown) => log.warn(`Could not tell the server that the folder is trusted (its next start will): ${errorMessage(error)}`),
    );
  };
  return vscode.Disposable.from(
    vscode.workspace.onDidGrantWorkspaceTrust(() => tell(server.state?.workspaceTrust)),
    // A server started just before the grant was told "untrusted".
    server.onSessionLoaded((state) => tell(state.workspaceTrust)),
  );
}
