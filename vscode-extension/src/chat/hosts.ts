// The webviews that show the chat: the side bar's view, and the editor tab "Tiller: Open Chat in
// Editor" opens (room for long plans and diffs; VS Code restores it after a reload). Both show
// the same chat: each is sent what changed since its own last message, and either one's answers
// go to the same server.
import * as vscode from "vscode";
import { chatHtml } from "./html";
import { isFromWebview, type FromWebview, type ToWebview } from "./messages";
import { ChatSync } from "./patch";

/** The editor tab's webview type (package.json's `onWebviewPanel:` activation names it). */
export const CHAT_PANEL_TYPE = "tiller.chatPanel";

export type HostKind = "view" | "editor";

/** One webview that shows the chat. */
export class ChatHost {
  /** What this webview was sent: its next message carries only what changed since. */
  readonly sync = new ChatSync();

  constructor(
    readonly kind: HostKind,
    readonly webview: vscode.Webview,
    private readonly showIt: (preserveFocus: boolean) => void,
  ) {}

  /** Brings it into view (`preserveFocus`: without taking the focus). */
  show(preserveFocus: boolean): void {
    this.showIt(preserveFocus);
  }

  post(message: ToWebview): Thenable<boolean> {
    return this.webview.postMessage(message);
  }
}

/** The webviews showing the chat now, at most one of each kind, and what they post. */
export class ChatHosts implements vscode.Disposable {
  private hosts: ChatHost[] = [];
  /** The editor tab, while it is open. */
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    /** A message one of them posted (already checked to be a webview message). */
    private readonly receive: (host: ChatHost, message: FromWebview) => void,
  ) {}

  get all(): readonly ChatHost[] {
    return this.hosts;
  }

  get(kind: HostKind): ChatHost | undefined {
    return this.hosts.find((host) => host.kind === kind);
  }

  /** The side bar's view, as VS Code resolves it. */
  attachView(view: vscode.WebviewView): void {
    this.attach(new ChatHost("view", view.webview, (preserveFocus) => view.show(preserveFocus)), view.onDidDispose);
  }

  /** The editor tab: brought forward when open (`preserveFocus`: without the focus), else made. */
  showPanel(preserveFocus: boolean): void {
    if (this.panel !== undefined) {
      this.panel.reveal(this.panel.viewColumn, preserveFocus);
    } else {
      this.adoptPanel(createChatPanel());
    }
  }

  /** Shows the chat in an editor tab: a new one, or one VS Code restored after a reload. */
  adoptPanel(panel: vscode.WebviewPanel): void {
    if (this.panel !== undefined && this.panel !== panel) {
      // One tab at a time: a second restored one is closed.
      panel.dispose();
      return;
    }
    this.panel = panel;
    dressChatPanel(panel, this.extensionUri);
    const host = new ChatHost("editor", panel.webview, (preserveFocus) => panel.reveal(panel.viewColumn, preserveFocus));
    this.attach(host, panel.onDidDispose);
  }

  dispose(): void {
    this.panel?.dispose();
  }

  /** Loads the chat's page into a host's webview and listens to it until `disposed` fires. */
  private attach(host: ChatHost, disposed: vscode.Event<void>): void {
    loadChatPage(host.webview, this.extensionUri);
    this.hosts = [...this.hosts.filter((known) => known.kind !== host.kind), host];
    const listeners: vscode.Disposable[] = [
      host.webview.onDidReceiveMessage((message: unknown) => {
        if (isFromWebview(message)) this.receive(host, message);
      }),
    ];
    listeners.push(
      disposed(() => {
        this.hosts = this.hosts.filter((known) => known !== host);
        if (host.kind === "editor") this.panel = undefined;
        for (const listener of listeners) listener.dispose();
        void vscode.commands.executeCommand("setContext", "tiller.chatFocused", false);
      }),
    );
  }
}

/** Gives a webview the chat's page: scripts on, resources from dist/ only. */
function loadChatPage(webview: vscode.Webview, extensionUri: vscode.Uri): void {
  const dist = vscode.Uri.joinPath(extensionUri, "dist");
  webview.options = { enableScripts: true, localResourceRoots: [dist] };
  webview.html = chatHtml(webview, dist);
}

/** A new editor tab for the chat, beside the active editor. */
function createChatPanel(): vscode.WebviewPanel {
  return vscode.window.createWebviewPanel(CHAT_PANEL_TYPE, "Tiller", vscode.ViewColumn.Beside, { retainContextWhenHidden: true });
}

/** The tab's title and icon (also for a tab VS Code restores after a reload). */
function dressChatPanel(panel: vscode.WebviewPanel, extensionUri: vscode.Uri): void {
  panel.title = "Tiller";
  panel.iconPath = vscode.Uri.joinPath(extensionUri, "media", "tiller.svg");
}
