// Diagnostics after edits: answers the server's `tiller/diagnostics` with what VS Code's
// language servers report for the files, and offers the capability in `initialize`
// (`experimental.tiller.diagnostics`) so the server asks. `settle`: the file was just changed;
// wait until its diagnostics change and go quiet, or a bounded time, before answering. A file
// no tab shows is opened in a preview tab (without the focus): language servers check those.
import * as vscode from "vscode";
import type { ClientCapabilities, StaticFeature } from "vscode-languageclient/node";
import type { DiagnosticSeverity as WireSeverity, DiagnosticsParams, DiagnosticsResult } from "./protocol";
import type { TillerServer } from "./server";

/** The longest wait for a language server to catch up with an edit. */
export const SETTLE_MS = 4000;
/** Diagnostics that stay unchanged this long count as settled. */
export const QUIET_MS = 400;
/** The wait for a first report on a language no language server has reported on yet. */
export const FIRST_REPORT_MS = 1500;
/** Languages nothing reports on: their files are answered at once. */
const SILENT = new Set(["plaintext", "markdown", "log", "ignore", "properties"]);

const SEVERITIES: readonly WireSeverity[] = ["error", "warning", "information", "hint"];

/** The `initialize` capability that makes the server ask `tiller/diagnostics`. */
export class DiagnosticsCapability implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    const tiller = (experimental.tiller ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, tiller: { ...tiller, diagnostics: true } };
  }
  initialize(): void {}
  getState(): { kind: "static" } {
    return { kind: "static" };
  }
  clear(): void {}
}

/**
 * Answers `tiller/diagnostics`. It watches every diagnostics change, so it knows whether a
 * file's diagnostics already changed since the baseline was asked (then it only waits for them
 * to go quiet) and which languages have a language server reporting at all (a file of another
 * language is answered at once: nothing would ever report on it).
 */
export class EditorDiagnostics implements vscode.Disposable {
  private readonly lastChange = new Map<string, number>();
  private readonly baselineAt = new Map<string, number>();
  private readonly reporting = new Set<string>();
  private readonly subscription: vscode.Disposable;

  constructor(server: TillerServer) {
    this.subscription = vscode.languages.onDidChangeDiagnostics((event) => {
      const now = Date.now();
      for (const uri of event.uris) {
        this.lastChange.set(uri.toString(), now);
        const document = vscode.workspace.textDocuments.find((open) => open.uri.toString() === uri.toString());
        if (document !== undefined && vscode.languages.getDiagnostics(uri).length > 0) this.reporting.add(document.languageId);
      }
    });
    server.handleRequest("tiller/diagnostics", (params) => this.answer(params));
  }

  dispose(): void {
    this.subscription.dispose();
  }

  private async answer(params: DiagnosticsParams): Promise<DiagnosticsResult> {
    const uris = params.paths.map((file) => vscode.Uri.file(file));
    await Promise.all(
      uris.map(async (uri) => {
        const key = uri.toString();
        const since = params.settle ? (this.baselineAt.get(key) ?? 0) : Date.now();
        const { languageId, shown } = await this.show(uri);
        if (!params.settle) this.baselineAt.set(key, since);
        // A file just shown is checked now: its baseline waits for that first report too.
        if (params.settle || shown) await this.settled(uri, languageId, since);
      }),
    );
    const diagnostics = uris.flatMap((uri, index) =>
      vscode.languages.getDiagnostics(uri).map((diagnostic) => ({
        path: params.paths[index] ?? uri.fsPath,
        line: diagnostic.range.start.line + 1,
        character: diagnostic.range.start.character + 1,
        severity: SEVERITIES[diagnostic.severity] ?? "error",
        message: diagnostic.message,
        ...(diagnostic.source !== undefined ? { source: diagnostic.source } : {}),
      })),
    );
    return { diagnostics };
  }

  /**
   * Opens the file in a preview tab, without taking the focus, unless a tab shows it already:
   * language servers (TypeScript's among them) check the files open in tabs only. `shown`: it
   * was opened just now. A file that does not exist (yet) is left alone.
   */
  private async show(uri: vscode.Uri): Promise<{ languageId?: string; shown: boolean }> {
    let document: vscode.TextDocument;
    try {
      document = await vscode.workspace.openTextDocument(uri);
    } catch {
      return { shown: false };
    }
    const key = uri.toString();
    const inTab = vscode.window.tabGroups.all.some((group) => group.tabs.some((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === key));
    if (inTab || SILENT.has(document.languageId)) return { languageId: document.languageId, shown: false };
    await vscode.window.showTextDocument(document, { preview: true, preserveFocus: true });
    return { languageId: document.languageId, shown: true };
  }

  /** Resolves once the diagnostics of `uri` changed since its baseline and then stayed quiet
   *  for QUIET_MS, at most SETTLE_MS after being asked (FIRST_REPORT_MS for a language nothing
   *  reported on yet). */
  private settled(uri: vscode.Uri, languageId: string | undefined, since: number): Promise<void> {
    const key = uri.toString();
    const changed = (): boolean => (this.lastChange.get(key) ?? 0) > since;
    if (!changed() && (languageId === undefined || SILENT.has(languageId))) return Promise.resolve();
    const most = changed() || this.reporting.has(languageId ?? "") ? SETTLE_MS : FIRST_REPORT_MS;
    return new Promise((resolve) => {
      let quiet: NodeJS.Timeout | undefined;
      const finish = (): void => {
        clearTimeout(quiet);
        clearTimeout(limit);
        subscription.dispose();
        resolve();
      };
      const limit = setTimeout(finish, most);
      const wait = (): void => {
        clearTimeout(quiet);
        quiet = setTimeout(finish, QUIET_MS);
      };
      const subscription = vscode.languages.onDidChangeDiagnostics((event) => {
        if (event.uris.some((changedUri) => changedUri.toString() === key)) wait();
      });
      if (changed()) wait();
    });
  }
}
