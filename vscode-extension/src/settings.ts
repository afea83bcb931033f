// Reads the tiller.* settings, validated, and tells when the ones the server needs change.
import * as vscode from "vscode";
import { type Settings } from "./initOptions";
export { validateSettings } from "./initOptions";
import { MODES, type Mode } from "./protocol";

const SECTION = "tiller";
/** Settings whose change needs a server restart (they are initializationOptions or the launch). */
const RESTART_KEYS = [
  "pythonPath",
  "model",
  "permissionMode",
  "toolBudget",
  "baseUrl",
  "demoScript",
  "dataDir",
];

function stringSetting(config: vscode.WorkspaceConfiguration, key: string): string {
  const value = config.get<unknown>(key);
  return typeof value === "string" ? value.trim() : "";
}

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const mode = config.get<unknown>("permissionMode");
  const budget = config.get<unknown>("toolBudget");
  return {
    pythonPath: stringSetting(config, "pythonPath"),
    model: stringSetting(config, "model"),
    permissionMode: MODES.includes(mode as Mode) ? (mode as Mode) : "default",
    toolBudget: typeof budget === "number" && budget >= 0 ? Math.floor(budget) : 20,
    baseUrl: stringSetting(config, "baseUrl"),
    demoScript: stringSetting(config, "demoScript"),
    dataDir: stringSetting(config, "dataDir"),
  };
}

/** Calls `onChange` when a setting that needs a server restart changes. */
export function onServerSettingsChanged(onChange: () => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((event) => {
    if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
      onChange();
    }
  });
}
