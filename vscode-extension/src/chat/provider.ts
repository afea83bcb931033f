// The chat webview view: keeps the chat model (a projection of the server's events), renders
// it in the webview, and turns the webview's messages into server requests or card decisions.
import * as vscode from "vscode";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, type State } from "../protocol";
import type { TillerServer } from "../server";
import { isFromWebview, type FromWebview, type ToWebview } from "./messages";
import {
  addHandledPrompt,
  addNotice,
  applyConnection,
  applyEvent,
  applyState,
  emptyChat,
  fromTranscript,
  type ChatModel,
} from "./model";

export const CHAT_VIEW_ID = "tiller.chat";

export type CardDecision = Extract<
  FromWebview,
  { type: "planDecision" } | { type: "toolDecision" } | { type: "checkpointDecision" }
>;

export class ChatProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private model: ChatModel = emptyChat();
  private view: vscode.WebviewView | undefined;
  private renderTimer: NodeJS.Timeout | undefined;
  private readonly decisions = new vscode.EventEmitter<CardDecision>();
  private readonly disposables: vscode.Disposable[] = [];

  /** Answers the user gave on a card (plan, tool confirmation, checkpoint). */
  readonly onDecision = this.decisions.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: TillerServer,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.decisions,
      server.onState((state) => this.update((model) => applyState(model, state))),
      server.onEvent((event) => this.update((model) => applyEvent(model, event))),
      server.onConnection((connection) => this.update((model) => applyConnection(model, connection))),
      server.onSessionLoaded((state) => void this.loadTranscript(state)),
    );
  }

  /** Applies a change to the chat model and schedules a render. */
  update(change: (model: ChatModel) => ChatModel): void {
    this.model = change(this.model);
    if (this.renderTimer === undefined) {
      this.renderTimer = setTimeout(() => {
        this.renderTimer = undefined;
        this.post({ type: "render", model: this.model });
      }, 30);
    }
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
  async loadTranscript(state: State): Promise<void> {
    try {
      const { entries, more } = await this.server.request("tiller/session/transcript", { sessionId: state.sessionId });
      this.update((model) =>
        entries.length === 0 && model.sessionId === state.sessionId
          ? model
          : applyState(fromTranscript(state.sessionId, entries, more === true), state),
      );
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
          this.post({ type: "render", model: this.model });
          return;
        case "focus":
          await vscode.commands.executeCommand("setContext", "tiller.chatFocused", message.focused);
          return;
        case "prompt": {
          const result = await this.server.request("tiller/prompt", { text: message.text });
          if (result.status === "handled") {
            this.update((model) => addHandledPrompt(model, message.text, result.message));
          }
          return;
        }
        case "interrupt":
          await this.server.request("tiller/interrupt", {});
          return;
        case "cycleMode":
          await this.server.request("tiller/cycleMode", {});
          return;
        case "clearQueue":
          await this.server.request("tiller/clearQueue", {});
          return;
        case "command":
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

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    const nonce = makeNonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} https: data:`,
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
  <textarea id="input" rows="3" placeholder="Ask Tiller… (Enter to send, Shift+Enter for a new line, Shift+Tab: mode, Esc: interrupt)"></textarea>
  <div id="bar"><span id="mode"></span><button type="button" id="stop" hidden>Stop</button><button type="submit" id="send">Send</button></div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }
}

function makeNonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let nonce = "";
  for (let i = 0; i < 32; i += 1) {
    nonce += chars.charAt(Math.floor(Math.random() * chars.length));
  }
  return nonce;
}
