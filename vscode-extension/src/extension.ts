// Wires the modules together. Every disposable goes into context.subscriptions.
import * as vscode from "vscode";
import { ApiKeyStore } from "./apiKey";
import { Approvals } from "./approvals";
import { CHAT_PANEL_TYPE } from "./chat/hosts";
import { addNoticeOnce } from "./chat/notices";
import { CHAT_VIEW_ID, ChatProvider } from "./chat/provider";
import { registerCommands } from "./commands";
import { DiffContents } from "./diffView";
import { DiagnosticsCapability, EditorDiagnostics } from "./editorDiagnostics";
import { Mentions } from "./mentions";
import { createMcpView } from "./mcpView";
import { createNotifications } from "./notifications";
import { createPermissionsView } from "./permissionsView";
import { TillerServer } from "./server";
import { onServerSettingsChanged } from "./settings";
import { createStatusBar } from "./status";
import { createTodoBoard } from "./todos";
import { tellWorkspaceTrust } from "./trust";

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Tiller", { log: true });
  const apiKey = new ApiKeyStore(context.secrets);
  const server = new TillerServer(context, log, apiKey);
  const diffs = new DiffContents();
  const mentions = new Mentions(log);
  const chat = new ChatProvider(context.extensionUri, server, log, diffs, mentions);
  server.offer(new DiagnosticsCapability());

  context.subscriptions.push(
    log,
    server,
    chat,
    diffs,
    mentions,
    new EditorDiagnostics(server),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    // The chat's editor tab, restored after a reload.
    vscode.window.registerWebviewPanelSerializer(CHAT_PANEL_TYPE, { deserializeWebviewPanel: async (panel) => chat.adoptPanel(panel) }),
    new Approvals(server, chat, log, diffs),
    createStatusBar(server),
    createTodoBoard(server),
    createMcpView(server),
    createPermissionsView(server),
    createNotifications(server),
    tellWorkspaceTrust(server, log),
    registerCommands({ server, chat, apiKey, log }),
    // Typing in a setting fires a change per keystroke: restart once they stop.
    onServerSettingsChanged(() => server.restartSoon()),
    apiKey.onDidChange(() => void server.restart()),
    server.onConnection((connection) => {
      const failure = server.lastFailure;
      if (connection === "stopped" && failure !== undefined) {
        // Settings typed key by key fail once per pause: one line per distinct problem.
        chat.update((model) => addNoticeOnce(model, failure, "error"));
      }
    }),
  );

  void server.start();
}

export function deactivate(): void {
  // The server is stopped by disposing context.subscriptions.
}
