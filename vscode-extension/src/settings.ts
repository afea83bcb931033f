// Reads the tiller.* settings, validated, and tells when the ones the server needs change.
import * as vscode from "vscode";
import { parseSettings, SETTING_NAMES, type CheckedSettings, type RawSettings, type Settings } from "./initOptions";
export { validateSettings } from "./initOptions";

const SECTION = "tiller";
/** Settings whose change needs a server restart (they are initializationOptions or the launch);
 *  `webSearch` and `webFetch` cover their `.enabled` and domain lists. */
const RESTART_KEYS = ["pythonPath", "model", "permissionMode", "toolBudget", "baseUrl", "demoScript", "dataDir", "webSearch", "webFetch"];

/** The settings, validated: a wrong value is replaced by its default and named in `warnings`. */
export function readSettingsChecked(): CheckedSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const raw: RawSettings = {};
  for (const name of SETTING_NAMES) {
    raw[name] = config.get<unknown>(name);
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
