// Wires the modules together. Every disposable goes into context.subscriptions.
import * as vscode from "vscode";
import { ApiKeyStore } from "./apiKey";
import { Approvals } from "./approvals";
import { CHAT_VIEW_ID, ChatProvider } from "./chat/provider";
import { registerCommands } from "./commands";
import { TillerServer } from "./server";
import { onServerSettingsChanged } from "./settings";
import { createStatusBar } from "./status";
import { createTodoBoard } from "./todos";

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Tiller", { log: true });
  const apiKey = new ApiKeyStore(context.secrets);
  const server = new TillerServer(context, log, apiKey);
  const chat = new ChatProvider(context.extensionUri, server, log);

  context.subscriptions.push(
    log,
    server,
    chat,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    new Approvals(server, chat, log),
    createStatusBar(server),
    createTodoBoard(server),
    registerCommands({ server, chat, apiKey, log }),
    onServerSettingsChanged(() => void server.restart()),
    apiKey.onDidChange(() => void server.restart()),
  );

  void server.start();
}

export function deactivate(): void {
  // The server is stopped by disposing context.subscriptions.
}
