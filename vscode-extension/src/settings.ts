// Reads the tiller.* settings, validated, and tells when the ones the server needs change.
import * as vscode from "vscode";
import { parseSettings, type CheckedSettings, type RawSettings, type Settings } from "./initOptions";
export { validateSettings } from "./initOptions";

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

const KEYS: readonly (keyof Settings)[] = ["pythonPath", "model", "permissionMode", "toolBudget", "baseUrl", "demoScript", "dataDir"];

/** The settings, validated: a wrong value is replaced by its default and named in `warnings`. */
export function readSettingsChecked(): CheckedSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const raw: RawSettings = {};
  for (const key of KEYS) {
    raw[key] = config.get<unknown>(key);
  }
  return parseSettings(raw);
}

export function readSettings(): Settings {
  return readSettingsChecked().settings;
}

/** Calls `onChange` when a setting that needs a server restart changes. */
export function onServerSettingsChanged(onChange: () => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((event) => {
    if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
      onChange();
    }
  });
}
