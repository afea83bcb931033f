// VS Code's Workspace Trust as the server hears it, and as the chat and the status bar say it.
// Pure: no vscode import, so it is unit-tested (and the webview bundle shares it).
import type { SetWorkspaceTrustParams, WorkspaceTrust } from "./protocol";

/** Who decided, as the server repeats it (`State.workspaceTrust.by`, its notices). */
export const VSCODE_TRUST = "VS Code workspace trust";

/** The command that opens VS Code's Workspace Trust editor (its "Trust" button). */
export const MANAGE_TRUST_COMMAND = "workbench.trust.manage";

/** What an untrusted folder means, in one line. */
export const UNTRUSTED_MEANING = "its .claude, .tiller and .mcp.json settings run no hooks, MCP or language servers and allow nothing more";

/** VS Code's decision for this window's workspace (`initializationOptions.workspaceTrust`). */
export function vscodeTrust(trusted: boolean): WorkspaceTrust {
  return { trusted, by: VSCODE_TRUST };
}

/**
 * What to tell a running server whose folder's trust is `serverTrust` (its `State`), now that
 * VS Code says `trusted`: the grant, when VS Code trusts the folder and the server does not;
 * otherwise nothing. VS Code never takes trust back from a live window (it reloads it), and a
 * server that reports no trust has none to change.
 */
export function trustToTell(trusted: boolean, serverTrust: WorkspaceTrust | undefined): SetWorkspaceTrustParams | undefined {
  if (!trusted || serverTrust === undefined || serverTrust.trusted) return undefined;
  return vscodeTrust(true);
}

/** The chat welcome's line for an untrusted folder (undefined: trusted, or not said); VS Code
 *  decides, so its Restricted Mode is named (the tooltip names any other decider). */
export function untrustedWelcome(trust: WorkspaceTrust | undefined): string | undefined {
  if (trust === undefined || trust.trusted) return undefined;
  const mode = trust.by === VSCODE_TRUST ? " (Restricted Mode)" : ` (${trust.by})`;
  return `This folder is not trusted${mode}: ${UNTRUSTED_MEANING}.`;
}

/** The status bar tooltip's line (undefined: a server that reports no trust). */
export function trustTooltipLine(trust: WorkspaceTrust | undefined): string | undefined {
  if (trust === undefined) return undefined;
  return trust.trusted
    ? `folder trusted (${trust.by}): its settings files apply`
    : `folder not trusted (${trust.by}): ${UNTRUSTED_MEANING} (Workspaces: Manage Workspace Trust)`;
}
