// The chat webview view: keeps the chat model (a projection of the server's events), sends the
// webview what changed in it, and turns the webview's messages into server requests or card
// decisions.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { DiffContents } from "../diffView";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, type State, type TillerEvent } from "../protocol";
import type { Mentions } from "../mentions";
import type { TillerServer } from "../server";
import { isMention, isPastedImage, type Mention, type PastedImage } from "./attachments";
import { isFromWebview, type FromWebview, type ToWebview } from "./messages";
import {
  addHandledPrompt,
  addNotice,
  applyConnection,
  applyEvent,
  applyState,
  emptyChat,
  fileEffects,
  fromTranscript,
  setProvider,
  trailingConnectionNotices,
  type ChatCommand,
  type ChatItem,
  type ChatModel,
  type OpenedCard,
} from "./model";
import { ChatSync } from "./patch";
import { uriOfShown } from "../workspaceFolders";

/** The before/after of an edit, kept in memory so its row can open the diff later. */
export interface EditTexts {
  path: string;
  before: string;
  after: string;
}

const CHAT_COMMANDS: ReadonlySet<ChatCommand> = new Set<ChatCommand>([
  "tiller.setApiKey",
  "tiller.showLogs",
  "tiller.newSession",
  "tiller.openSettings",
  "tiller.resumeSession",
  "tiller.restartServer",
  "workbench.trust.manage",
]);
const EDITS_KEPT = 200;

export const CHAT_VIEW_ID = "tiller.chat";

export type CardDecision = Extract<
  FromWebview,
  { type: "planDecision" } | { type: "toolDecision" } | { type: "checkpointDecision" }
>;

export class ChatProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private model: ChatModel = emptyChat();
  private view: vscode.WebviewView | undefined;
  private renderTimer: NodeJS.Timeout | undefined;
  /** What the webview was sent: the next message carries only what changed since. */
  private readonly sync = new ChatSync();
  private readonly edits = new Map<string, EditTexts>();
  /** Connection notices shown since the last redraw (kept by the redraw after a restart). */
  private carry: ChatItem[] = [];
  /** `command` events seen (each draws a slash command and its answer). */
  private commandEvents = 0;
  private readonly decisions = new vscode.EventEmitter<CardDecision>();
  private readonly disposables: vscode.Disposable[] = [];

  /** Answers the user gave on a card (plan, tool confirmation, checkpoint). */
  readonly onDecision = this.decisions.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: TillerServer,
    private readonly log: vscode.LogOutputChannel,
    private readonly diffs: DiffContents,
    private readonly mentions: Mentions,
  ) {
    this.disposables.push(
      this.decisions,
      server.onState((state) => this.update((model) => setProvider(applyState(model, state, Date.now()), server.provider ?? null))),
      server.onEvent((event) => {
        this.noteEdit(event);
        if (event.type === "command") this.commandEvents += 1;
        this.update((model) => applyEvent(model, event, Date.now()));
      }),
      server.onConnection((connection) => {
        const before = new Set(this.model.items.map((item) => item.id));
        this.update((model) => applyConnection(model, connection, server.stopReason));
        // The server never hears of these: the redraw after the restart keeps them.
        this.carry.push(...trailingConnectionNotices(this.model).filter((item) => !before.has(item.id)));
      }),
      server.onSessionLoaded((state) => void this.loadTranscript(state, true)),
      mentions.onActiveEditor((editor) => this.post({ type: "activeEditor", editor })),
    );
  }

  /** Keeps the before/after of a proposed edit (from its confirmation preview). */
  rememberEdit(toolUseId: string, texts: EditTexts): void {
    this.edits.set(toolUseId, texts);
    while (this.edits.size > EDITS_KEPT) {
      const oldest = this.edits.keys().next().value;
      if (oldest === undefined) break;
      this.edits.delete(oldest);
    }
  }

  /** An edit's texts from its input (edit_file's old/new strings), for a server that keeps none. */
  private noteEdit(event: TillerEvent | { type: string; toolUseId?: unknown; name?: unknown; input?: unknown }): void {
    if (event.type !== "toolStarted" || !("input" in event) || typeof event.input !== "object" || event.input === null) return;
    const toolUseId = typeof event.toolUseId === "string" ? event.toolUseId : "";
    if (toolUseId === "" || this.edits.has(toolUseId)) return;
    const input = event.input as Record<string, unknown>;
    const path = typeof input.path === "string" ? input.path : "";
    if (event.name === "edit_file" && typeof input.old_string === "string" && typeof input.new_string === "string") {
      this.rememberEdit(toolUseId, { path, before: input.old_string, after: input.new_string });
    }
    // A write_file's before is not in its input: the server keeps it (tiller/edit).
  }

  /** Opens (or adopts) the card a server request asks on; returns its id. */
  open(make: (model: ChatModel) => OpenedCard): string {
    let id = "";
    this.update((model) => {
      const opened = make(model);
      id = opened.id;
      return opened.model;
    });
    return id;
  }

  /** Applies a change to the chat model and schedules sending it (changes within 30 ms go together). */
  update(change: (model: ChatModel) => ChatModel): void {
    this.model = change(this.model);
    if (this.renderTimer === undefined) {
      this.renderTimer = setTimeout(() => {
        this.renderTimer = undefined;
        this.sendChanges();
      }, 30);
    }
  }

  /** Sends the webview what changed in the chat since the last patch. */
  private sendChanges(): void {
    const view = this.view;
    if (view === undefined) return;
    const patch = this.sync.next(this.model);
    if (patch === undefined) return;
    // Not delivered (the view went away): the next patch is the whole chat.
    const lost = (): void => this.sync.reset();
    void view.webview.postMessage({ type: "patch", patch } satisfies ToWebview).then((delivered) => {
      if (!delivered) lost();
    }, lost);
  }

  /** Shows the chat view without taking the focus (used when a card needs an answer). */
  reveal(preserveFocus = true): void {
    if (this.view !== undefined) {
      this.view.show(preserveFocus);
    } else {
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
  }

  /** Redraws the chat of a session from the server (resume, fork, restart). */
  async loadTranscript(state: State, afterRestart = false): Promise<void> {
    try {
      const { entries, more } = await this.server.request("tiller/session/transcript", { sessionId: state.sessionId });
      for (const entry of entries) {
        if (typeof entry === "object" && entry !== null && (entry as { kind?: unknown }).kind === "toolStarted") {
          this.noteEdit({ ...(entry as Record<string, unknown>), type: "toolStarted" });
        }
      }
      const kept = this.carry;
      this.carry = [];
      this.update((model) => {
        const carry = afterRestart && model.sessionId === state.sessionId ? kept : [];
        return setProvider(applyState(fromTranscript(state.sessionId, entries, more === true, carry), state), this.server.provider ?? null);
      });
    } catch (error) {
      if (!hasErrorCode(error, METHOD_NOT_FOUND)) {
        this.log.warn(`Loading the transcript failed: ${errorMessage(error)}`);
      }
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if (isFromWebview(message)) {
          void this.receive(message);
        }
      }),
      view.onDidDispose(() => {
        this.view = undefined;
        void vscode.commands.executeCommand("setContext", "tiller.chatFocused", false);
      }),
    );
  }

  focusInput(): void {
    this.post({ type: "focusInput" });
  }

  dispose(): void {
    clearTimeout(this.renderTimer);
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  private post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  private async receive(message: FromWebview): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
          // A (re)loaded webview has nothing: send it the whole chat.
          this.sync.reset();
          this.sendChanges();
          this.post({ type: "activeEditor", editor: this.mentions.activeEditor() });
          return;
        case "mentionQuery":
          if (typeof message.query === "string" && Number.isInteger(message.requestId)) {
            this.post({ type: "mentions", requestId: message.requestId, items: await this.mentions.query(message.query) });
          }
          return;
        case "openFile":
          if (typeof message.path === "string") await openFileAt(message.path, message.line);
          return;
        case "focus":
          await vscode.commands.executeCommand("setContext", "tiller.chatFocused", message.focused);
          return;
        case "prompt": {
          const mentions: Mention[] = Array.isArray(message.mentions) ? message.mentions.filter(isMention) : [];
          const images: PastedImage[] = Array.isArray(message.images) ? message.images.filter(isPastedImage) : [];
          await this.prompt(message.text, mentions, images, message.activeEditor === true);
          return;
        }
        case "listCommands": {
          // Built-in and custom slash commands, as the server reads them now.
          const listed = await this.server.request("tiller/listCommands", {});
          this.post({ type: "commands", commands: listed.commands });
          return;
        }
        case "steer":
          await this.server.request("tiller/steer", { text: message.text });
          return;
        case "interrupt":
          await this.server.request("tiller/interrupt", message.turnId !== undefined ? { turnId: message.turnId } : {});
          return;
        case "openDiff":
          await this.openDiff(message.toolUseId);
          return;
        case "rewind":
          await this.rewind(message.turnId);
          return;
        case "undoRewind": {
          await this.server.request("tiller/undoRewind", { undoId: message.undoId });
          await this.loadTranscript(await this.server.request("tiller/getState", {}));
          return;
        }
        case "copy":
          await vscode.env.clipboard.writeText(message.text);
          void vscode.window.setStatusBarMessage("Tiller: copied", 2000);
          return;
        case "cycleMode":
          await this.server.request("tiller/cycleMode", {});
          return;
        case "clearQueue":
          await this.server.request("tiller/clearQueue", {});
          return;
        case "command":
          if (!CHAT_COMMANDS.has(message.command)) {
            return;
          }
          if (message.command === "tiller.openSettings") {
            await vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
          } else {
            await vscode.commands.executeCommand(message.command);
          }
          return;
        case "planDecision":
        case "toolDecision":
        case "checkpointDecision":
          this.decisions.fire(message);
          return;
      }
    } catch (error) {
      this.update((model) => addNotice(model, errorMessage(error), "error"));
    }
  }

  /**
   * Sends a prompt. `/resume` alone opens the History picker. A slash command is drawn by its
   * `command` event (posted in the session it was typed in, before the answer); one that
   * switched the session (`/clear`, `/resume ID`, `/fork`, `/slice`) redraws the chat from the
   * new session's transcript, which says nothing of it: its answer is shown there.
   */
  private async prompt(text: string, mentions: Mention[] = [], images: PastedImage[] = [], activeEditor = false): Promise<void> {
    if (/^\/(resume|sessions|history)\s*$/i.test(text.trim())) {
      await vscode.commands.executeCommand("tiller.resumeSession");
      return;
    }
    const before = this.server.state?.sessionId;
    const commandEvents = this.commandEvents;
    const attachments = text.trim().startsWith("/") ? [] : await this.mentions.attachments(mentions, activeEditor, images);
    const result = await this.server.request("tiller/prompt", attachments.length > 0 ? { text, attachments } : { text });
    if (result.status !== "handled") {
      return;
    }
    const state = await this.server.request("tiller/getState", {});
    if (state.sessionId !== before) {
      await this.loadTranscript(state);
      if (result.message !== undefined && result.message !== "") {
        this.update((model) => addNotice(model, result.message ?? ""));
      }
    } else if (this.commandEvents === commandEvents) {
      // A server that posts no `command` event: draw the command here.
      this.update((model) => addHandledPrompt(model, text, result.message));
    }
  }

  /**
   * "Rewind to here": shows what a rewind to before `turnId` would change (a dry run), asks,
   * rewinds, redraws, and offers to undo it.
   */
  async rewind(turnId: string): Promise<void> {
    const prompt = this.promptOf(turnId);
    const preview = await this.server.request("tiller/rewind", { turnId, files: true, conversation: true, dryRun: true });
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
    if (choice === undefined) return;
    await this.server.request("tiller/rewind", { turnId, files: choice !== talkOnly, conversation: choice !== filesOnly });
    // The transcript's "rewound" entry says what happened and carries the undo.
    await this.loadTranscript(await this.server.request("tiller/getState", {}));
  }

  private promptOf(turnId: string): string {
    const item = this.model.items.find((candidate) => candidate.kind === "user" && candidate.turnId === turnId);
    const text = item !== undefined && item.kind === "user" ? item.text.split("\n")[0] ?? "" : "this prompt";
    return text.length > 60 ? `${text.slice(0, 59)}…` : text;
  }

  /** Opens the before/after of a finished edit: as the server kept it, else as known here. */
  private async openDiff(toolUseId: string): Promise<void> {
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

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    const nonce = makeNonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      // Never a remote image: a URL in model output could carry data out (prompt injection).
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Tiller</title>
</head>
<body>
<main id="log" aria-live="polite"></main>
<section id="queue" hidden></section>
<form id="composer">
  <div id="info"><span id="mode"></span><span id="usage" title="Context used / the model's window · session cost"></span></div>
  <ul id="slash" hidden></ul>
  <textarea id="input" rows="3" placeholder="Ask Tiller… (Enter to send, Shift+Enter for a new line, Shift+Tab: mode, Esc: interrupt)"></textarea>
  <div id="bar"><span class="spacer"></span><button type="button" id="stop" hidden>Stop</button><button type="submit" id="send">Send</button></div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }
}

/** Opens a workspace file (relative or absolute) at a line (1-based), as a tool row links it. */
async function openFileAt(file: string, line?: number): Promise<void> {
  const uri = uriOfShown(file); // relative, folder-qualified ("api/src/x.py") or absolute
  const at = line !== undefined && Number.isInteger(line) && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.window.showTextDocument(uri, { preview: true, ...(at !== undefined ? { selection: new vscode.Range(at, at) } : {}) });
}

/** The CSP nonce: 128 bits from the system's cryptographic random source. */
function makeNonce(): string {
  return randomBytes(16).toString("base64url");
}
