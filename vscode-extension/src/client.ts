// The language client of one launch: the server's command and environment (the API key only
// in its environment, never in the initialization options, so no trace holds it), the
// initialization options, and the client capabilities `initialize` offers.
import * as vscode from "vscode";
import { LanguageClient, type ErrorHandler, type LanguageClientOptions, type ServerOptions, type StaticFeature } from "vscode-languageclient/node";
import { BUNDLED_DEMO, toInitializationOptions, type ProviderOption, type Settings } from "./initOptions";
import { serverArgs } from "./launch";
import { errorMessage } from "./protocol";

/** What one launch runs: which Python, warm or not, with which settings, key and trust. */
export interface LaunchChoices {
  python: string;
  warm: boolean;
  settings: Settings;
  key: string | undefined;
  trusted: boolean;
}

/** What the client of a launch reports to, and offers. */
export interface ClientHooks {
  log: vscode.LogOutputChannel;
  features: readonly StaticFeature[];
  /** What to do when the connection errs or the process exits. */
  errorHandler: ErrorHandler;
  /** The server refused to start (`initialize` failed). */
  initializationFailed: (message: string) => void;
}

/** Which provider a server runs (the bundled offline demo is a scripted provider of its own). */
export type ProviderShown = ProviderOption["kind"] | "demo";

export function createClient({ python, warm, settings, key, trusted }: LaunchChoices, hooks: ClientHooks): { client: LanguageClient; provider: ProviderShown } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (key !== undefined) {
    env.ANTHROPIC_API_KEY = key;
  }
  const hasKey = Boolean(env.ANTHROPIC_API_KEY ?? env.ANTHROPIC_AUTH_TOKEN);
  const serverOptions: ServerOptions = {
    command: python,
    args: serverArgs(warm),
    // No `transport`: stdio all the same, and the args stay exactly serverArgs' (with
    // TransportKind.stdio vscode-languageclient appends `--stdio`, which the warm template
    // refuses: every server was then imported anew, ~1.5 s of CPU each).
    options: { env, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const initializationOptions = toInitializationOptions(settings, hasKey, trusted);
  const provider = initializationOptions.provider;
  const clientOptions: LanguageClientOptions = {
    documentSelector: [],
    outputChannel: hooks.log,
    initializationOptions,
    errorHandler: hooks.errorHandler,
    initializationFailedHandler: (error: unknown) => {
      hooks.initializationFailed(`Tiller server refused to start: ${errorMessage(error)}`);
      return false;
    },
  };
  const client = new LanguageClient("tiller", "Tiller", serverOptions, clientOptions);
  for (const feature of hooks.features) client.registerFeature(feature);
  return { client, provider: provider.kind === "scripted" && provider.script === BUNDLED_DEMO ? "demo" : provider.kind };
}
