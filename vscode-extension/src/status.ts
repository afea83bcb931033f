// Status bar: `mode · model · active todo (done/total)` driven only by tiller/state, plus a
// model switcher item. Also mirrors `busy` into the `tiller.busy` context key for keybindings.
import * as vscode from "vscode";
import type { State } from "./protocol";
import type { Connection, TillerServer } from "./server";
import { statusText, statusTooltip } from "./statusText";

export function createStatusBar(server: TillerServer): vscode.Disposable {
  const main = vscode.window.createStatusBarItem("tiller.status", vscode.StatusBarAlignment.Left, 100);
  main.name = "Tiller";
  const model = vscode.window.createStatusBarItem("tiller.model", vscode.StatusBarAlignment.Left, 99);
  model.name = "Tiller Model";
  model.command = "tiller.switchModel";
  model.tooltip = "Tiller: Switch Model…";

  const showConnection = (connection: Connection): void => {
    if (connection === "running" && server.state !== undefined) {
      return;
    }
    const failure = connection === "stopped" ? server.lastFailure : undefined;
    const settings = failure !== undefined && server.lastFailureIsSettings;
    // A failure stays here (not in a toast, which cannot be closed) until a start succeeds.
    main.text = connection === "stopped" ? (settings ? "$(error) Tiller: settings error" : "$(error) Tiller: stopped") : "$(loading~spin) Tiller: starting…";
    main.tooltip =
      connection === "stopped"
        ? `${failure ?? "The Tiller server is not running."}\nClick to ${settings ? "open the settings" : "see the logs"}.`
        : "Starting the Tiller server";
    main.command =
      connection !== "stopped" ? undefined : settings ? { command: "workbench.action.openSettings", title: "Open Settings", arguments: ["tiller."] } : "tiller.showLogs";
    main.backgroundColor = connection === "stopped" && failure !== undefined ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    model.hide();
    main.show();
  };

  const showState = (state: State): void => {
    main.text = statusText(state, server.provider);
    main.tooltip = statusTooltip(state, server.provider);
    main.command = "tiller.cycleMode";
    // Plan mode stands out: nothing changes until a plan is approved.
    main.backgroundColor = state.mode === "plan" ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    model.text = "$(chip)";
    main.show();
    model.show();
    void vscode.commands.executeCommand("setContext", "tiller.busy", state.busy);
  };

  showConnection("starting");
  return vscode.Disposable.from(
    main,
    model,
    server.onConnection((connection) => {
      if (connection !== "running") {
        void vscode.commands.executeCommand("setContext", "tiller.busy", false);
        showConnection(connection);
      }
    }),
    server.onState(showState),
  );
}
