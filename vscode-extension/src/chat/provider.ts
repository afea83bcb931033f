// The chat webview view: keeps the chat model (a projection of the server's events), sends the
// webview what changed in it, and turns the webview's messages into server requests or card
// decisions. The page is `html.ts`'s, the edits' diffs `edits.ts`'s, the rewind's question
// `rewind.ts`'s.
import * as vscode from "vscode";
import type { DiffContents } from "../diffView";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, type State } from "../protocol";
import type { Mentions } from "../mentions";
import type { TillerServer } from "../server";
import { isMention, isPastedImage, type Mention, type PastedImage } from "./attachments";
import type { OpenedCard } from "./cards";
import { EditMemory, type EditTexts } from "./edits";
import { chatHtml } from "./html";
import { emptyChat, type ChatCommand, type ChatItem, type ChatModel } from "./items";
import { isFromWebview, type FromWebview, type ToWebview } from "./messages";
import { applyEvent, applyState, fromTranscript, setProvider } from "./model";
import { addHandledPrompt, addNotice, applyConnection, trailingConnectionNotices } from "./notices";
import { ChatSync } from "./patch";
import { askAndRewind, promptLine } from "./rewind";
import { uriOfShown } from "../workspaceFolders";

const CHAT_COMMANDS: ReadonlySet<ChatCommand> = new Set<ChatCommand>([
  "tiller.setApiKey",
  "tiller.showLogs",
  "tiller.newSession",
  "tiller.openSettings",
  "tiller.resumeSession",
  "tiller.restartServer",
  "workbench.trust.manage",
]);

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
  private readonly edits: EditMemory;
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
    diffs: DiffContents,
    private readonly mentions: Mentions,
  ) {
    this.edits = new EditMemory(server, diffs);
    this.disposables.push(
      this.decisions,
      server.onState((state) => this.update((model) => setProvider(applyState(model, state, Date.now()), server.provider ?? null))),
      server.onEvent((event) => {
        this.edits.noteStarted(event);
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
    this.edits.remember(toolUseId, texts);
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
          this.edits.noteStarted({ ...(entry as Record<string, unknown>), type: "toolStarted" });
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
    view.webview.html = chatHtml(view.webview, dist);
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

  /** A message of the webview; what fails is said in the chat. */
  private async receive(message: FromWebview): Promise<void> {
    try {
      await this.handle(message);
    } catch (error) {
      this.update((model) => addNotice(model, errorMessage(error), "error"));
    }
  }

  /** What each webview message asks: the chat's own work, a server request, or a card's answer. */
  private async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.resendAll();
      case "mentionQuery":
        return this.answerMentions(message.query, message.requestId);
      case "openFile":
        return typeof message.path === "string" ? openFileAt(message.path, message.line) : undefined;
      case "focus":
        await vscode.commands.executeCommand("setContext", "tiller.chatFocused", message.focused);
        return;
      case "prompt": {
        const mentions: Mention[] = Array.isArray(message.mentions) ? message.mentions.filter(isMention) : [];
        const images: PastedImage[] = Array.isArray(message.images) ? message.images.filter(isPastedImage) : [];
        return this.prompt(message.text, mentions, images, message.activeEditor === true);
      }
      case "listCommands":
        return this.listCommands();
      case "openDiff":
        return this.edits.open(message.toolUseId);
      case "rewind":
        return this.rewind(message.turnId);
      case "undoRewind":
        return this.undoRewind(message.undoId);
      case "copy":
        await vscode.env.clipboard.writeText(message.text);
        void vscode.window.setStatusBarMessage("Tiller: copied", 2000);
        return;
      case "command":
        return runChatCommand(message.command);
      case "steer":
      case "interrupt":
      case "cycleMode":
      case "clearQueue":
        return this.forward(message);
      case "planDecision":
      case "toolDecision":
      case "checkpointDecision":
        this.decisions.fire(message);
        return;
    }
  }

  /** A (re)loaded webview has nothing: send it the whole chat and the active editor. */
  private resendAll(): void {
    this.sync.reset();
    this.sendChanges();
    this.post({ type: "activeEditor", editor: this.mentions.activeEditor() });
  }

  /** The @-picker's entries for a query: files at once, then symbols when the language servers answer. */
  private async answerMentions(query: unknown, requestId: number): Promise<void> {
    if (typeof query === "string" && Number.isInteger(requestId)) {
      const items = await this.mentions.query(query);
      this.post({ type: "mentions", requestId, items });
      const more = await this.mentions.withSymbols(query, items);
      if (more !== undefined) this.post({ type: "mentions", requestId, items: more });
    }
  }

  /** Built-in and custom slash commands, as the server reads them now. */
  private async listCommands(): Promise<void> {
    const listed = await this.server.request("tiller/listCommands", {});
    this.post({ type: "commands", commands: listed.commands });
  }

  /** Messages that are a server request as they are (their answers come back as events and states). */
  private async forward(message: Extract<FromWebview, { type: "steer" | "interrupt" | "cycleMode" | "clearQueue" }>): Promise<void> {
    switch (message.type) {
      case "steer":
        await this.server.request("tiller/steer", { text: message.text });
        return;
      case "interrupt":
        await this.server.request("tiller/interrupt", message.turnId !== undefined ? { turnId: message.turnId } : {});
        return;
      case "cycleMode":
        await this.server.request("tiller/cycleMode", {});
        return;
      case "clearQueue":
        await this.server.request("tiller/clearQueue", {});
        return;
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
    if (!(await askAndRewind(this.server, turnId, promptLine(this.model.items, turnId)))) return;
    // The transcript's "rewound" entry says what happened and carries the undo.
    await this.loadTranscript(await this.server.request("tiller/getState", {}));
  }

  private async undoRewind(undoId: string): Promise<void> {
    await this.server.request("tiller/undoRewind", { undoId });
    await this.loadTranscript(await this.server.request("tiller/getState", {}));
  }
}

/** A command a chat item's button names (only those the chat offers run). */
async function runChatCommand(command: ChatCommand): Promise<void> {
  if (!CHAT_COMMANDS.has(command)) {
    return;
  }
  if (command === "tiller.openSettings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
  } else {
    await vscode.commands.executeCommand(command);
  }
}

/** Opens a workspace file (relative or absolute) at a line (1-based), as a tool row links it. */
async function openFileAt(file: string, line?: number): Promise<void> {
  const uri = uriOfShown(file); // relative, folder-qualified ("api/src/x.py") or absolute
  const at = line !== undefined && Number.isInteger(line) && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.window.showTextDocument(uri, { preview: true, ...(at !== undefined ? { selection: new vscode.Range(at, at) } : {}) });
}
