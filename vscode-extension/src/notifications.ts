// Tells a user who looked away (the window is not focused) that Tiller needs an answer or has
// finished; `tiller.notifications: false` turns it off. Subagents' events are not announced.
import * as vscode from "vscode";
import { notificationFor } from "./notifyText";
import type { TillerServer } from "./server";

export function createNotifications(server: TillerServer): vscode.Disposable {
  return server.onEvent((event) => {
    if (vscode.window.state.focused || event.parentTurnId !== undefined) return;
    if (!vscode.workspace.getConfiguration("tiller").get<boolean>("notifications", true)) return;
    const text = notificationFor(event);
    if (text === undefined) return;
    void vscode.window.showInformationMessage(text, "Open Chat").then((choice) => {
      if (choice !== undefined) void vscode.commands.executeCommand("tiller.openChat");
    });
  });
}
