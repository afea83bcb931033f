// The editor as context: what the chat's @-picker offers (files and folders, respecting
// files.exclude, search.exclude and .gitignore; workspace symbols; @selection @problems
// @terminal @diff), the active editor the input's chip shows, and the attachments a prompt
// carries once sent. Nothing is attached unless the user picked it or left its chip on.
import { execFile } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import * as vscode from "vscode";
import {
  rankMentions,
  SPECIAL_MENTIONS,
  type ActiveEditor,
  type Mention,
  type PastedImage,
} from "./chat/attachments";
import type { AttachmentParams } from "./protocol";
import { shownOf, uriOfShown } from "./workspaceFolders";

const run = promisify(execFile);
const FILES_SCANNED = 5000;
const FILES_FRESH_MS = 10_000;
const SHOWN = 12;
const TEXT_CAP = 100_000;
const TERMINAL_KEPT = 64 * 1024;
/** How long a pick of @terminal waits for the last command's output to finish arriving (it
 *  reaches the extension host a little after the terminal shows the command ended). */
const TERMINAL_SETTLE_MS = 1500;

/** The last command run in a terminal with shell integration, and its output so far. */
interface TerminalCapture {
  command: string;
  output: string;
  /** Resolves once the command ended and all its output was read. */
  done: Promise<void>;
}

export class Mentions implements vscode.Disposable {
  private files: { at: number; paths: string[] } | undefined;
  /** The last text editor that was active: while the chat's editor tab has the focus, VS Code
   *  has no active text editor, and the editor beside the chat is the one meant. */
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private terminal: TerminalCapture | undefined;
  private readonly activeEmitter = new vscode.EventEmitter<ActiveEditor | null>();
  private readonly disposables: vscode.Disposable[] = [];

  /** The active editor (file and selection) as its chip shows it; null: none. */
  readonly onActiveEditor = this.activeEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel) {
    const changed = (): void => this.activeEmitter.fire(this.activeEditor());
    this.disposables.push(
      this.activeEmitter,
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor !== undefined) this.lastEditor = editor;
        changed();
      }),
      vscode.window.onDidChangeTextEditorSelection(changed),
      vscode.workspace.onDidCreateFiles(() => (this.files = undefined)),
      vscode.workspace.onDidDeleteFiles(() => (this.files = undefined)),
      vscode.window.onDidStartTerminalShellExecution((event) => void this.capture(event.execution)),
    );
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }

  /** The active text editor; while a webview tab (the chat's) has the focus, the last one, as
   *  long as it is still shown. */
  private editor(): vscode.TextEditor | undefined {
    const active = vscode.window.activeTextEditor;
    if (active !== undefined) return active;
    const last = this.lastEditor;
    return last !== undefined && vscode.window.visibleTextEditors.includes(last) ? last : undefined;
  }

  activeEditor(): ActiveEditor | null {
    const editor = this.editor();
    if (editor === undefined || editor.document.uri.scheme !== "file") return null;
    const shown = relative(editor.document.uri);
    const selection = editor.selection;
    if (selection.isEmpty) return { path: shown };
    const end = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
    return { path: shown, startLine: selection.start.line + 1, endLine: end };
  }

  /** The picker's entries for `query` that are at hand: matching specials, then files and folders. */
  async query(query: string): Promise<Mention[]> {
    const specials = rankMentions(query, SPECIAL_MENTIONS, (item) => item.kind, 4).map((item): Mention => ({ ...item }));
    const paths = await this.workspaceFiles();
    const folders = [...new Set(paths.flatMap((file) => parents(file)))];
    const entries: Mention[] = [
      ...paths.map((file): Mention => ({ kind: "file", label: file, path: file })),
      ...folders.map((folder): Mention => ({ kind: "folder", label: folder, path: folder })),
    ];
    const found = rankMentions(query, entries, (item) => item.label, SHOWN);
    return [...specials, ...found].slice(0, SHOWN + 4);
  }

  /**
   * The same entries with the workspace's matching symbols after them, or undefined when there
   * are none. Asked apart: a language server still analysing the workspace may take its time,
   * and the files must not wait for it.
   */
  async withSymbols(query: string, entries: readonly Mention[]): Promise<Mention[] | undefined> {
    const symbols = await this.symbols(query);
    return symbols.length === 0 || entries.length >= SHOWN + 4 ? undefined : [...entries, ...symbols].slice(0, SHOWN + 4);
  }

  /** The attachments of a prompt: the picked mentions, the active editor's (when its chip is
   *  on), the images. */
  async attachments(mentions: readonly Mention[], active: boolean, images: readonly PastedImage[]): Promise<AttachmentParams[]> {
    const out: AttachmentParams[] = [];
    if (active) {
      const editor = this.activeEditorContext();
      const mentioned = editor?.kind === "file" && mentions.some((mention) => mention.kind === "file" && mention.path === editor.path);
      if (editor !== undefined && !mentioned) out.push(editor);
    }
    for (const mention of mentions) {
      out.push(await this.resolve(mention));
    }
    for (const image of images) {
      out.push({ kind: "image", name: image.name, mediaType: image.mediaType, data: image.data, ...(image.thumbnail !== undefined ? { thumbnail: image.thumbnail } : {}) });
    }
    return out;
  }

  private activeEditorContext(): AttachmentParams | undefined {
    const editor = this.editor();
    const shown = this.activeEditor();
    if (editor === undefined || shown === null) return undefined;
    if (shown.startLine === undefined) return { kind: "file", name: shown.path, path: shown.path };
    return selectionOf(editor);
  }

  private async resolve(mention: Mention): Promise<AttachmentParams> {
    switch (mention.kind) {
      case "file":
      case "folder":
        return { kind: mention.kind, name: mention.path, path: mention.path };
      case "symbol": {
        const uri = absolute(mention.path);
        const document = await vscode.workspace.openTextDocument(uri);
        const range = new vscode.Range(mention.startLine - 1, 0, mention.endLine, 0);
        return { kind: "symbol", name: mention.label, path: mention.path, startLine: mention.startLine, endLine: mention.endLine, text: cap(document.getText(range)) };
      }
      case "selection": {
        const editor = this.editor();
        if (editor === undefined || editor.selection.isEmpty) return { kind: "selection", name: "selection", text: "(nothing is selected in the editor)" };
        return selectionOf(editor);
      }
      case "problems":
        return { kind: "problems", name: "problems", text: problemsText() };
      case "terminal": {
        const last = this.terminal;
        if (last === undefined) return { kind: "terminal", name: "terminal", text: "(no terminal output captured yet: it needs a terminal with shell integration)" };
        let timer: NodeJS.Timeout | undefined;
        const ended = await Promise.race([last.done.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), TERMINAL_SETTLE_MS)))]);
        clearTimeout(timer);
        // VS Code's stream misses the output of a command that ends at once (`ls`, `echo`):
        // then the terminal's own copy of it is asked for.
        const output = last.output.trim() === "" && ended ? ((await lastCommandOutput(this.log)) ?? "") : last.output;
        return { kind: "terminal", name: "terminal", text: cap(`$ ${last.command}\n${stripAnsi(output)}`) };
      }
      case "diff":
        return { kind: "diff", name: "diff", text: await gitDiff() };
    }
  }

  /** Workspace files, relative, without what files.exclude, search.exclude or .gitignore hide. */
  private async workspaceFiles(): Promise<string[]> {
    if (this.files !== undefined && Date.now() - this.files.at < FILES_FRESH_MS) return this.files.paths;
    const excluded = excludedGlobs();
    const exclude = excluded.length > 0 ? `{${excluded.join(",")}}` : undefined;
    const uris = (await vscode.workspace.findFiles("**/*", exclude, FILES_SCANNED)).filter((uri) => uri.scheme === "file");
    const kept: string[] = [];
    // Every workspace folder's files, each checked against its own .gitignore, shown as the
    // server names them: the primary folder's plainly, another folder's under its name.
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const mine = uris.filter((uri) => vscode.workspace.getWorkspaceFolder(uri)?.uri.toString() === folder.uri.toString());
      const inFolder = mine.map((uri) => path.relative(folder.uri.fsPath, uri.fsPath).split(path.sep).join("/"));
      const visible = new Set(await withoutIgnored(inFolder, folder.uri.fsPath, this.log));
      kept.push(...mine.filter((_, index) => visible.has(inFolder[index] ?? "")).map(relative));
    }
    this.files = { at: Date.now(), paths: kept.sort() };
    return this.files.paths;
  }

  private async symbols(query: string): Promise<Mention[]> {
    if (query.length < 2) return [];
    try {
      const found = (await vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>("vscode.executeWorkspaceSymbolProvider", query)) ?? [];
      return found
        .filter((symbol) => symbol.location.uri.scheme === "file")
        .slice(0, 8)
        .map((symbol) => ({
          kind: "symbol",
          label: symbol.name,
          path: relative(symbol.location.uri),
          startLine: symbol.location.range.start.line + 1,
          endLine: symbol.location.range.end.line + 1,
          detail: vscode.SymbolKind[symbol.kind],
        }));
    } catch (error) {
      this.log.warn(`workspace symbols: ${String(error)}`);
      return [];
    }
  }

  private async capture(execution: vscode.TerminalShellExecution): Promise<void> {
    let finished = (): void => undefined;
    const capture: TerminalCapture = { command: execution.commandLine.value, output: "", done: new Promise<void>((resolve) => (finished = resolve)) };
    this.terminal = capture;
    try {
      for await (const data of execution.read()) {
        capture.output = (capture.output + data).slice(-TERMINAL_KEPT);
      }
    } finally {
      finished();
    }
  }
}

function root(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

/** As the server shows it: relative to the primary folder, or under another folder's name. */
function relative(uri: vscode.Uri): string {
  return shownOf(uri);
}

function absolute(shown: string): vscode.Uri {
  return uriOfShown(shown);
}

function parents(file: string): string[] {
  const parts = file.split("/").slice(0, -1);
  return parts.map((_, index) => parts.slice(0, index + 1).join("/"));
}

function cap(text: string): string {
  return text.length > TEXT_CAP ? `${text.slice(0, TEXT_CAP)}\n… [cut: ${text.length} characters in all]` : text;
}

function selectionOf(editor: vscode.TextEditor): AttachmentParams {
  const shown = relative(editor.document.uri);
  const selection = editor.selection;
  const startLine = selection.start.line + 1;
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  const name = `${shown.split("/").pop() ?? shown}:${startLine}${endLine !== startLine ? `-${endLine}` : ""}`;
  return { kind: "selection", name, path: shown, startLine, endLine, text: cap(editor.document.getText(selection)) };
}

const SEVERITY = ["error", "warning", "information", "hint"] as const;

function problemsText(): string {
  const lines: string[] = [];
  for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
    for (const diagnostic of diagnostics) {
      if (diagnostic.severity > vscode.DiagnosticSeverity.Warning) continue;
      const at = `${relative(uri)}:${diagnostic.range.start.line + 1}:${diagnostic.range.start.character + 1}`;
      lines.push(`${at}: ${SEVERITY[diagnostic.severity]}: ${diagnostic.message}${diagnostic.source ? ` [${diagnostic.source}]` : ""}`);
    }
  }
  if (lines.length === 0) return "(no errors or warnings)";
  return cap(lines.slice(0, 200).join("\n") + (lines.length > 200 ? `\n… ${lines.length - 200} more` : ""));
}

/** The globs `files.exclude` and `search.exclude` turn on (the quick-open's excludes). */
function excludedGlobs(): string[] {
  const globs: string[] = [];
  for (const section of ["files.exclude", "search.exclude"]) {
    const value = vscode.workspace.getConfiguration().get<Record<string, unknown>>(section) ?? {};
    for (const [glob, on] of Object.entries(value)) {
      if (on === true) globs.push(glob);
    }
  }
  return globs;
}

/** `paths` (relative to `cwd`) without those git ignores (all of them outside a git repository or without git). */
async function withoutIgnored(paths: string[], cwd: string, log: vscode.LogOutputChannel): Promise<string[]> {
  if (paths.length === 0) return paths;
  try {
    const child = execFile("git", ["check-ignore", "--stdin", "-z"], { cwd, maxBuffer: 8 * 1024 * 1024 });
    const answer = new Promise<string>((resolve) => {
      let out = "";
      child.stdout?.on("data", (data: Buffer) => (out += data.toString()));
      child.on("close", () => resolve(out));
      child.on("error", () => resolve(""));
    });
    child.stdin?.on("error", () => undefined); // EPIPE: git quit first (not a repository)
    child.stdin?.end(paths.join("\0") + "\0");
    const ignored = new Set((await answer).split("\0").filter(Boolean));
    return paths.filter((file) => !ignored.has(file));
  } catch (error) {
    log.warn(`git check-ignore: ${String(error)}`);
    return paths;
  }
}

async function gitDiff(): Promise<string> {
  const base = root();
  if (base === undefined) return "(no workspace folder)";
  try {
    const { stdout } = await run("git", ["diff", "HEAD", "--no-color"], { cwd: base.fsPath, maxBuffer: 16 * 1024 * 1024 });
    return stdout.trim() === "" ? "(no uncommitted changes)" : cap(stdout);
  } catch (error) {
    return `(git diff failed: ${String(error).split("\n")[0] ?? ""})`;
  }
}

/** The active terminal's last command output, through VS Code's "Copy Last Command Output"
 *  (the clipboard, put back as it was after); undefined when there is none or it failed. */
async function lastCommandOutput(log: vscode.LogOutputChannel): Promise<string | undefined> {
  const clipboard = vscode.env.clipboard;
  let saved: string | undefined;
  try {
    saved = await clipboard.readText();
    await clipboard.writeText("");
    await vscode.commands.executeCommand("workbench.action.terminal.copyLastCommandOutput");
    const copied = await clipboard.readText();
    log.info(`@terminal: the shell integration stream had no output; the terminal's copy has ${copied.length} characters`);
    return copied.trim() === "" ? undefined : copied;
  } catch (error) {
    log.warn(`last terminal command output: ${String(error)}`);
    return undefined;
  } finally {
    if (saved !== undefined) await clipboard.writeText(saved).then(undefined, () => undefined);
  }
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g, "");
}
