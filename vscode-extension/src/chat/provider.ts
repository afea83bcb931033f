// The chat: keeps the chat model (a projection of the server's events), sends each webview that
// shows it (the side bar's view, the editor tab: `hosts.ts`) what changed in it, and turns the
// webviews' messages into server requests or card decisions. The page is `html.ts`'s, the
// edits' diffs `edits.ts`'s, the rewind's question `rewind.ts`'s.
import * as vscode from "vscode";
import type { DiffContents } from "../diffView";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, type State } from "../protocol";
import type { Mentions } from "../mentions";
import type { TillerServer } from "../server";
import { isMention, isPastedImage, type Mention, type PastedImage } from "./attachments";
import type { OpenedCard } from "./cards";
import { EditMemory, type EditTexts } from "./edits";
import { ChatHosts, type ChatHost, type HostKind } from "./hosts";
import { emptyChat, type ChatCommand, type ChatItem, type ChatModel } from "./items";
import { answerMentionQuery } from "./mentionAnswers";
import type { FromWebview, ToWebview } from "./messages";
import { applyEvent, applyState, fromTranscript, setProvider } from "./model";
import { addHandledPrompt, addNotice, applyConnection, trailingConnectionNotices } from "./notices";
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
  /** The webviews showing the chat: the side bar's view, the editor tab. */
  private readonly hosts: ChatHosts;
  private renderTimer: NodeJS.Timeout | undefined;
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
    extensionUri: vscode.Uri,
    private readonly server: TillerServer,
    private readonly log: vscode.LogOutputChannel,
    diffs: DiffContents,
    private readonly mentions: Mentions,
  ) {
    this.edits = new EditMemory(server, diffs);
    this.hosts = new ChatHosts(extensionUri, (host, message) => void this.receive(host, message));
    this.disposables.push(
      this.hosts,
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

  /** Sends each webview what changed in the chat since its last patch. */
  private sendChanges(): void {
    for (const host of this.hosts.all) {
      const patch = host.sync.next(this.model);
      if (patch === undefined) continue;
      // Not delivered (the webview went away): its next patch is the whole chat.
      const lost = (): void => host.sync.reset();
      void host.post({ type: "patch", patch }).then((delivered) => {
        if (!delivered) lost();
      }, lost);
    }
  }

  /** Shows the chat without taking the focus (used when a card needs an answer): in its editor
   *  tab when one is open, else in the side bar. */
  reveal(preserveFocus = true): void {
    const host = this.hosts.get("editor") ?? this.hosts.get("view");
    if (host !== undefined) {
      host.show(preserveFocus);
    } else {
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
  }

  /** "Tiller: Open Chat in Editor": the same chat in an editor tab (brought forward when open). */
  openInEditor(): void {
    this.hosts.showPanel(false);
    this.focusInput("editor");
  }

  /** An editor tab of the chat VS Code restored after a reload. */
  adoptPanel(panel: vscode.WebviewPanel): void {
    this.hosts.adoptPanel(panel);
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
    this.hosts.attachView(view);
  }

  /** Puts the cursor in the chat input of the side bar's view or of the editor tab. */
  focusInput(kind: HostKind = "view"): void {
    void this.hosts.get(kind)?.post({ type: "focusInput" });
  }

  dispose(): void {
    clearTimeout(this.renderTimer);
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  /** Sends every webview showing the chat the same message. */
  private post(message: ToWebview): void {
    for (const host of this.hosts.all) void host.post(message);
  }

  /** A message of a webview; what fails is said in the chat. */
  private async receive(host: ChatHost, message: FromWebview): Promise<void> {
    try {
      await this.handle(host, message);
    } catch (error) {
      this.update((model) => addNotice(model, errorMessage(error), "error"));
    }
  }

  /** What each webview message asks: the chat's own work (answered to the webview that asked),
   *  a server request, or a card's answer. */
  private async handle(host: ChatHost, message: FromWebview): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.resendAll(host);
      case "mentionQuery":
        return typeof message.query === "string" && Number.isInteger(message.requestId)
          ? answerMentionQuery(this.mentions, message.query, message.requestId, (answer) => void host.post(answer))
          : undefined;
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
        return this.listCommands(host);
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
  private resendAll(host: ChatHost): void {
    host.sync.reset();
    this.sendChanges();
    void host.post({ type: "activeEditor", editor: this.mentions.activeEditor() });
  }

  /** Built-in and custom slash commands, as the server reads them now. */
  private async listCommands(host: ChatHost): Promise<void> {
    const listed = await this.server.request("tiller/listCommands", {});
    void host.post({ type: "commands", commands: listed.commands });
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
