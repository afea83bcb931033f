// Settings → initializationOptions. Pure: no vscode import, so it is unit-tested.
import type { Mode } from "./protocol";

export interface Settings {
  pythonPath: string;
  model: string;
  permissionMode: Mode;
  toolBudget: number;
  baseUrl: string;
  demoScript: string;
  dataDir: string;
}

export type ProviderOption =
  | { kind: "anthropic"; baseUrl?: string }
  | { kind: "scripted"; script: string };

export interface InitializationOptions {
  permissionMode: Mode;
  toolBudget: number;
  provider: ProviderOption;
  model?: string;
  dataDir?: string;
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

export function toInitializationOptions(
  settings: Settings,
  hasApiKey: boolean,
): InitializationOptions {
  const options: InitializationOptions = {
    permissionMode: settings.permissionMode,
    toolBudget: settings.toolBudget,
    provider: providerFor(settings, hasApiKey),
  };
  if (settings.model !== "") {
    options.model = settings.model;
  }
  if (settings.dataDir !== "") {
    options.dataDir = settings.dataDir;
  }
  return options;
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
