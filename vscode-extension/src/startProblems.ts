// Why the server did not start, said where the user looks: the log every time, the status bar
// and the chat until a start succeeds, and a toast once per distinct problem (a toast cannot be
// closed). Setting warnings (a value that is wrong, and what is used instead) the same way.
import * as vscode from "vscode";

export class StartProblems {
  /** Why the server last failed to start (the chat and the status bar show it). */
  lastFailure: string | undefined;
  /** Whether that failure is a setting's value (the status bar then opens the settings). */
  lastFailureIsSettings = false;
  /** Problems already shown as a toast (forgotten when the server starts, so the same problem
   *  coming back shows again). */
  private readonly shownProblems = new Set<string>();
  /** Setting warnings shown; one that was fixed is dropped, so it shows again if it returns. */
  private shownWarnings = new Set<string>();

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** Logs a failure and keeps it for the status bar and the chat. */
  record(message: string, settings: boolean): void {
    this.log.error(message);
    this.lastFailure = message;
    this.lastFailureIsSettings = settings;
  }

  /** The toast of a failure, once per problem (the status bar item shows it until it is fixed). */
  toastOnce(message: string): void {
    if (this.shownProblems.has(message)) return;
    this.shownProblems.add(message);
    void vscode.window.showErrorMessage(message, "Show Logs", "Open Settings").then((choice) => {
      if (choice === "Show Logs") {
        this.log.show();
      } else if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
      }
    });
  }

  /** The server started: no failure stands, and a problem coming back shows again. */
  clear(): void {
    this.lastFailure = undefined;
    this.lastFailureIsSettings = false;
    this.shownProblems.clear();
  }

  /** Each setting warning once (logged every time): which value is wrong and what is used. */
  warnAboutSettings(warnings: string[]): void {
    for (const warning of warnings) {
      this.log.warn(warning);
      if (!this.shownWarnings.has(warning)) {
        void vscode.window.showWarningMessage(`Tiller: ${warning}`, "Open Settings").then((choice) => {
          if (choice === "Open Settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
          }
        });
      }
    }
    this.shownWarnings = new Set(warnings);
  }
}
