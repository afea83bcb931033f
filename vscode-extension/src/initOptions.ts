// Settings → initializationOptions. Pure: no vscode import, so it is unit-tested.
import { MODE_WORDS } from "./chat/words";
import { MODES, type Mode, type WorkspaceTrust } from "./protocol";
import { vscodeTrust } from "./trustText";

export interface Settings {
  pythonPath: string;
  model: string;
  permissionMode: Mode;
  toolBudget: number;
  baseUrl: string;
  demoScript: string;
  dataDir: string;
  webSearch: WebToolSetting;
  webFetch: WebToolSetting;
}

/** The API's server tools the settings can turn on: `tiller.webSearch.*`, `tiller.webFetch.*`. */
export const WEB_TOOLS = ["webSearch", "webFetch"] as const;
export type WebTool = (typeof WEB_TOOLS)[number];

/** One web tool as its settings read: off unless `enabled`; one domain list at most. */
export interface WebToolSetting {
  enabled: boolean;
  allowedDomains: string[];
  blockedDomains: string[];
}

export const WEB_TOOL_OFF: WebToolSetting = { enabled: false, allowedDomains: [], blockedDomains: [] };

/** `initializationOptions.webSearch` / `webFetch` (docs/protocol.md): sent only when on, so a
 *  tool left off here is as the server's own settings files have it. */
export interface WebToolOption {
  enabled: true;
  allowedDomains?: string[];
  blockedDomains?: string[];
}

/** The tiller.* settings read, by their names under `tiller.`. */
export const SETTING_NAMES = [
  "pythonPath",
  "model",
  "permissionMode",
  "toolBudget",
  "baseUrl",
  "demoScript",
  "dataDir",
  ...WEB_TOOLS.flatMap((tool) => [`${tool}.enabled`, `${tool}.allowedDomains`, `${tool}.blockedDomains`] as const),
] as const;
export type SettingName = (typeof SETTING_NAMES)[number];

export type ProviderOption =
  | { kind: "anthropic"; baseUrl?: string }
  | { kind: "scripted"; script: string };

export interface InitializationOptions {
  permissionMode: Mode;
  toolBudget: number;
  provider: ProviderOption;
  model?: string;
  dataDir?: string;
  /** VS Code's Workspace Trust: it decides whether the folder's settings files may run
   *  programs and widen grants (the server's own record does not apply). */
  workspaceTrust: WorkspaceTrust;
  webSearch?: WebToolOption;
  webFetch?: WebToolOption;
}

/** The tiller.* values as VS Code returns them (anything a user typed into settings.json). */
export type RawSettings = Partial<Record<SettingName, unknown>>;

/** Settings as read: validated, and what was wrong with them. */
export interface CheckedSettings {
  settings: Settings;
  warnings: string[];
}

export const DEFAULT_TOOL_BUDGET = 20;

function text(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

function squeezed(name: string): string {
  return name.toLowerCase().replace(/[\s_-]/g, "");
}

/** A mode by its id or its words, any case ("acceptEdits", "accept edits"). */
export function modeNamed(name: string): Mode | undefined {
  const wanted = squeezed(name);
  return MODES.find((mode) => squeezed(mode) === wanted || squeezed(MODE_WORDS[mode]) === wanted);
}

/**
 * Validated settings, and what was wrong with them: each warning names the setting, the value
 * that is wrong and the value used instead (the server still starts).
 */
export function parseSettings(raw: RawSettings): CheckedSettings {
  const warnings: string[] = [];
  let permissionMode: Mode = "default";
  const mode = raw.permissionMode;
  if (mode !== undefined && mode !== null && mode !== "") {
    const named = typeof mode === "string" ? modeNamed(mode) : undefined;
    if (named !== undefined) {
      permissionMode = named;
    } else {
      const valid = MODES.map((m) => `'${m}' (${MODE_WORDS[m]})`).join(", ");
      warnings.push(`The setting 'tiller.permissionMode' is ${JSON.stringify(mode)}, which is not a mode; using 'default' (${MODE_WORDS.default}). Valid values: ${valid}.`);
    }
  }
  let toolBudget = DEFAULT_TOOL_BUDGET;
  const budget = raw.toolBudget;
  if (budget !== undefined && budget !== null) {
    if (typeof budget === "number" && Number.isFinite(budget) && budget >= 0) {
      toolBudget = Math.floor(budget);
      if (toolBudget !== budget) {
        warnings.push(`The setting 'tiller.toolBudget' is ${budget}, not a whole number; using ${toolBudget}.`);
      }
    } else {
      warnings.push(
        `The setting 'tiller.toolBudget' is ${JSON.stringify(budget)}; it must be a whole number of tool calls, 0 or more (0 = never ask). Using ${DEFAULT_TOOL_BUDGET}.`,
      );
    }
  }
  return {
    settings: {
      pythonPath: text(raw.pythonPath),
      model: text(raw.model),
      permissionMode,
      toolBudget,
      baseUrl: text(raw.baseUrl),
      demoScript: text(raw.demoScript),
      dataDir: text(raw.dataDir),
      webSearch: parseWebTool(raw, "webSearch", warnings),
      webFetch: parseWebTool(raw, "webFetch", warnings),
    },
    warnings,
  };
}

/** `tiller.<tool>.enabled` and its domain lists; a wrong value is named in `warnings`. */
function parseWebTool(raw: RawSettings, tool: WebTool, warnings: string[]): WebToolSetting {
  const enabledValue = raw[`${tool}.enabled`];
  let enabled = false;
  if (typeof enabledValue === "boolean") {
    enabled = enabledValue;
  } else if (enabledValue !== undefined && enabledValue !== null) {
    warnings.push(`The setting 'tiller.${tool}.enabled' is ${JSON.stringify(enabledValue)}, not true or false; using false (off).`);
  }
  const allowedDomains = domainList(raw[`${tool}.allowedDomains`], `tiller.${tool}.allowedDomains`, warnings);
  let blockedDomains = domainList(raw[`${tool}.blockedDomains`], `tiller.${tool}.blockedDomains`, warnings);
  if (enabled && allowedDomains.length > 0 && blockedDomains.length > 0) {
    warnings.push(
      `The settings 'tiller.${tool}.allowedDomains' and 'tiller.${tool}.blockedDomains' are both set; the API takes one list: using allowedDomains only.`,
    );
    blockedDomains = [];
  }
  return { enabled, allowedDomains, blockedDomains };
}

/** A list of domains: its non-empty strings, trimmed (the server reduces each to one spelling). */
function domainList(value: unknown, name: string, warnings: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    warnings.push(`The setting '${name}' is ${JSON.stringify(value)}, not a list of domains such as ["docs.python.org"]; using none.`);
    return [];
  }
  const domains = value.filter((entry): entry is string => typeof entry === "string").map((entry) => entry.trim()).filter((entry) => entry !== "");
  const left = value.filter((entry) => typeof entry !== "string" || entry.trim() === "");
  if (left.length > 0) {
    warnings.push(`The setting '${name}' has entries that are not domains (${left.map((entry) => JSON.stringify(entry)).join(", ")}); they are left out.`);
  }
  return domains;
}

/**
 * Whether two readings start the same server. VS Code also announces settings whose values did
 * not change: granting Workspace Trust names every restricted setting the user's own files set
 * (`tiller.pythonPath`, `tiller.baseUrl`, ...), which must not restart the server.
 */
export function sameSettings(a: CheckedSettings, b: CheckedSettings): boolean {
  // parseSettings builds both the same way: the same values give the same JSON.
  return JSON.stringify(a.settings) === JSON.stringify(b.settings) && a.warnings.join("\n") === b.warnings.join("\n");
}

/** The name of the offline demo script bundled with the server package. */
export const BUNDLED_DEMO = "demo";

/**
 * Which provider the server uses: an explicit demo script wins, then an explicit base URL,
 * then the real API when a key is available, else the bundled offline demo.
 * The API key itself never goes here: it travels in the server's environment.
 */
export function providerFor(settings: Settings, hasApiKey: boolean): ProviderOption {
  if (settings.demoScript !== "") {
    return { kind: "scripted", script: settings.demoScript };
  }
  if (settings.baseUrl !== "") {
    return { kind: "anthropic", baseUrl: settings.baseUrl };
  }
  return hasApiKey ? { kind: "anthropic" } : { kind: "scripted", script: BUNDLED_DEMO };
}

/** `workspaceTrusted`: `vscode.workspace.isTrusted` (false in Restricted Mode). */
export function toInitializationOptions(
  settings: Settings,
  hasApiKey: boolean,
  workspaceTrusted: boolean,
): InitializationOptions {
  const options: InitializationOptions = {
    permissionMode: settings.permissionMode,
    toolBudget: settings.toolBudget,
    provider: providerFor(settings, hasApiKey),
    workspaceTrust: vscodeTrust(workspaceTrusted),
  };
  if (settings.model !== "") {
    options.model = settings.model;
  }
  if (settings.dataDir !== "") {
    options.dataDir = settings.dataDir;
  }
  for (const tool of WEB_TOOLS) {
    const option = webToolOption(settings[tool]);
    if (option !== undefined) options[tool] = option;
  }
  return options;
}

/** A web tool's option when its setting turns it on; undefined (left out) when off. */
export function webToolOption(setting: WebToolSetting): WebToolOption | undefined {
  if (!setting.enabled) return undefined;
  return {
    enabled: true,
    ...(setting.allowedDomains.length > 0 ? { allowedDomains: setting.allowedDomains } : {}),
    ...(setting.blockedDomains.length > 0 ? { blockedDomains: setting.blockedDomains } : {}),
  };
}

/** What is wrong with the settings, in words that name the setting; undefined when fine. */
export function validateSettings(settings: Settings): string | undefined {
  if (settings.baseUrl !== "") {
    let url: URL | undefined;
    try {
      url = new URL(settings.baseUrl);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      return `The setting 'tiller.baseUrl' is not a valid http(s) URL: '${settings.baseUrl}'. Fix it (e.g. https://api.anthropic.com) or clear it; the server starts again once it is valid.`;
    }
  }
  return undefined;
}
