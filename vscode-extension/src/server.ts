// Owns the server process: launch (Python resolution, env with the API key, the warm start with
// a plain fallback: launch.ts), the typed request/notification surface, restart on crash
// (resume the last session) and on demand.
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State as ClientState,
  type CancellationToken,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from "vscode-languageclient/node";
import { type ApiKeyStore } from "./apiKey";
import { BUNDLED_DEMO, sameSettings, toInitializationOptions, type CheckedSettings, type ProviderOption } from "./initOptions";
import { serverArgs, WarmChoice } from "./launch";
import {
  errorMessage,
  hasErrorCode,
  INVALID_PARAMS,
  METHOD_NOT_FOUND,
  type ClientRequestMethod,
  type ClientRequests,
  type ServerNotificationMethod,
  type ServerNotifications,
  type ServerRequestMethod,
  type ServerRequests,
  type State,
  type Todo,
} from "./protocol";
import { PythonSetupError, resolvePython } from "./python";
import { Debounce, Lifecycle } from "./restarts";
import { readSettingsChecked, validateSettings } from "./settings";

export type Connection = "starting" | "running" | "stopped";
/** Why the connection last left "running". */
export type StopReason = "restart" | "crash" | "stopped";

/** Settings changes arriving within this window cause one restart. */
export const RESTART_DEBOUNCE_MS = 1500;

type RequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequests[M][0],
  token: CancellationToken,
) => Promise<ServerRequests[M][1]>;

const MAX_RESTARTS = 5;
/** The user's last thinking choice (on/off), re-applied to every new server. */
const THINKING_KEY = "tiller.thinkingEnabled";
/** The session this workspace showed last: a window reload (a new extension host) resumes it. */
const SESSION_KEY = "tiller.lastSessionId";
const RESTART_WINDOW_MS = 3 * 60 * 1000;

export class TillerServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private lastState: State | undefined;
  private crashes: number[] = [];
  /** Start, restart and stop, one at a time; a restart queued and not begun is shared. */
  private readonly lifecycle = new Lifecycle();
  /** Settings typed key by key: one restart once they stop changing. */
  private readonly settingsRestart = new Debounce(RESTART_DEBOUNCE_MS, () => void this.restartForSettings());
  /** The settings the last launch read (a settings event that changes none restarts nothing). */
  private launchedWith: CheckedSettings | undefined;
  /** False from a launch until the session is resumed: a fresh server first announces a
   *  throwaway session, which must not replace the chat. */
  private synchronized = false;
  /** Why the connection last left "running" (the chat words its notice after it). */
  stopReason: StopReason = "stopped";
  private readonly requestHandlers: Array<(client: LanguageClient) => void> = [];
  /** Client capabilities offered in `initialize` (kept across restarts). */
  private readonly features: StaticFeature[] = [];
  /** Launch warm (`python -m tiller --warm`) until a warm launch fails to start. */
  private readonly warmChoice = new WarmChoice(process.env);

  private readonly stateEmitter = new vscode.EventEmitter<State>();
  private readonly todosEmitter = new vscode.EventEmitter<Todo[]>();
  private readonly eventEmitter = new vscode.EventEmitter<ServerNotifications["tiller/event"]>();
  private readonly connectionEmitter = new vscode.EventEmitter<Connection>();
  /** Fires after (re)start with the session that is now loaded, for redrawing the chat. */
  private readonly sessionLoadedEmitter = new vscode.EventEmitter<State>();

  readonly onState = this.stateEmitter.event;
  readonly onTodos = this.todosEmitter.event;
  readonly onEvent = this.eventEmitter.event;
  readonly onConnection = this.connectionEmitter.event;
  readonly onSessionLoaded = this.sessionLoadedEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly apiKey: ApiKeyStore,
  ) {}

  /** Why the server last failed to start (the chat and the status bar show it). */
  lastFailure: string | undefined;
  /** Whether that failure is a setting's value (the status bar then opens the settings). */
  lastFailureIsSettings = false;
  /** Problems already shown as a toast (a toast cannot be closed: each distinct one once,
   *  forgotten when the server starts, so the same problem coming back shows again). */
  private readonly shownProblems = new Set<string>();
  /** Setting warnings shown; one that was fixed is dropped, so it shows again if it returns. */
  private shownWarnings = new Set<string>();

  /** Which provider the running server was started with (shown in the status tooltip). */
  provider: ProviderOption["kind"] | "demo" | undefined;

  /** The last `State` the server sent (the server is the source of truth; this is its echo). */
  get state(): State | undefined {
    return this.lastState;
  }

  start(): Promise<void> {
    return this.lifecycle.run(() => this.launch());
  }

  /** Restarts now; a restart already queued and not begun is shared, never doubled. */
  restart(): Promise<void> {
    this.settingsRestart.cancel();
    return this.lifecycle.restart(async () => {
      this.stopReason = "restart";
      await this.shutdown();
      await this.launch();
    });
  }

  /** A restart after the changes stop coming (settings typed key by key restart once), if the
   *  settings then read differently from the running server's. */
  restartSoon(): void {
    this.settingsRestart.trigger();
  }

  /** Restarts when the settings now differ from those of the last launch. */
  private restartForSettings(): Promise<void> {
    if (this.launchedWith !== undefined && sameSettings(this.launchedWith, readSettingsChecked())) {
      this.log.info("Settings were announced as changed but read the same: the server keeps running.");
      return Promise.resolve();
    }
    return this.restart();
  }

  async request<M extends ClientRequestMethod>(
    method: M,
    params: ClientRequests[M][0],
  ): Promise<ClientRequests[M][1]> {
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      throw new Error("The Tiller server is not running (see 'Tiller: Show Logs').");
    }
    return client.sendRequest<ClientRequests[M][1]>(method, params);
  }

  /** Asks the server for the board (a server without `tiller/getTodos` has an empty one). */
  async refreshTodos(): Promise<void> {
    const { todos } = await this.request("tiller/getTodos", {}).catch((error: unknown) => {
      if (hasErrorCode(error, METHOD_NOT_FOUND)) {
        return { todos: [] };
      }
      throw error;
    });
    this.todosEmitter.fire(todos);
  }

  /** Registers the handler of a server → client request (kept across restarts). */
  handleRequest<M extends ServerRequestMethod>(method: M, handler: RequestHandler<M>): void {
    const install = (client: LanguageClient): void => {
      client.onRequest(method, (params: ServerRequests[M][0], token: CancellationToken) =>
        handler(params, token),
      );
    };
    this.requestHandlers.push(install);
    if (this.client !== undefined) {
      install(this.client);
    }
  }

  /** Offers a client capability in `initialize` from the next start on. */
  offer(feature: StaticFeature): void {
    this.features.push(feature);
  }

  dispose(): void {
    this.settingsRestart.cancel();
    void this.lifecycle.run(() => this.shutdown());
    this.stateEmitter.dispose();
    this.todosEmitter.dispose();
    this.eventEmitter.dispose();
    this.connectionEmitter.dispose();
    this.sessionLoadedEmitter.dispose();
  }

  private async shutdown(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      await client.dispose(3000).catch((error: unknown) => this.log.warn(`stop: ${errorMessage(error)}`));
    }
    this.connectionEmitter.fire("stopped");
  }

  private async launch(): Promise<void> {
    this.connectionEmitter.fire("starting");
    const checked = readSettingsChecked();
    this.launchedWith = checked;
    const { settings, warnings } = checked;
    this.warnAboutSettings(warnings);
    const problem = validateSettings(settings);
    if (problem !== undefined) {
      this.failed(problem, true);
      return;
    }
    const key = await this.apiKey.get();
    // Restricted Mode (VS Code's Workspace Trust): no Python the workspace chose, and the server
    // told that the folder's settings files run nothing (trust.ts tells it of a grant).
    const trusted = vscode.workspace.isTrusted;
    let python: string;
    try {
      python = await resolvePython(settings.pythonPath, trusted, this.context, this.log);
    } catch (error) {
      this.failed(error instanceof PythonSetupError ? error.message : `Tiller: ${errorMessage(error)}`);
      return;
    }
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (key !== undefined) {
      env.ANTHROPIC_API_KEY = key;
    }
    const hasKey = Boolean(env.ANTHROPIC_API_KEY ?? env.ANTHROPIC_AUTH_TOKEN);
    const warm = this.warmChoice.warm;
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
    this.provider = provider.kind === "scripted" && provider.script === BUNDLED_DEMO ? "demo" : provider.kind;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.log,
      initializationOptions,
      errorHandler: this.errorHandler(),
      initializationFailedHandler: (error: unknown) => {
        this.failed(`Tiller server refused to start: ${errorMessage(error)}`);
        return false;
      },
    };
    const client = new LanguageClient("tiller", "Tiller", serverOptions, clientOptions);
    for (const feature of this.features) client.registerFeature(feature);
    this.client = client;
    this.synchronized = false;
    this.listen(client, "tiller/state", (state) => {
      if (!this.synchronized) return;
      this.rememberThinking(this.lastState, state);
      this.remember(state);
      this.stateEmitter.fire(state);
    });
    this.listen(client, "tiller/todos", ({ todos }) => this.synchronized && this.todosEmitter.fire(todos));
    this.listen(client, "tiller/event", (event) => this.synchronized && this.eventEmitter.fire(event));
    for (const install of this.requestHandlers) {
      install(client);
    }
    client.onDidChangeState(({ newState }) => {
      if (newState === ClientState.Running && this.client === client) {
        void this.synchronize();
      }
    });
    try {
      await client.start();
    } catch (error) {
      if (this.client === client && this.warmChoice.launchFailed(warm)) {
        this.log.warn(`The warm start failed (${errorMessage(error)}); starting the server plainly.`);
        this.client = undefined;
        await client.dispose(3000).catch(() => undefined);
        await this.launch();
        return;
      }
      this.failed(`Tiller server did not start: ${errorMessage(error)}`);
    }
  }

  private listen<M extends ServerNotificationMethod>(
    client: LanguageClient,
    method: M,
    handler: (params: ServerNotifications[M]) => void,
  ): void {
    client.onNotification(method, handler);
  }

  private remember(state: State): void {
    if (this.lastState?.sessionId !== state.sessionId) {
      void this.context.workspaceState.update(SESSION_KEY, state.sessionId);
    }
    this.lastState = state;
  }

  /** The user's thinking choice (undefined: never toggled in this workspace). */
  get thinkingChoice(): boolean | undefined {
    const value = this.context.workspaceState.get<unknown>(THINKING_KEY);
    return typeof value === "boolean" ? value : undefined;
  }

  /** A thinking change within one session is the user's choice (a session switch is not). */
  private rememberThinking(previous: State | undefined, next: State): void {
    if (previous !== undefined && previous.sessionId === next.sessionId && previous.thinking.enabled !== next.thinking.enabled) {
      void this.context.workspaceState.update(THINKING_KEY, next.thinking.enabled);
    }
  }

  /** Puts the user's thinking choice back on a new server (which starts with the default). */
  private async applyThinkingChoice(): Promise<void> {
    const enabled = this.thinkingChoice;
    if (enabled === undefined) return;
    await this.request("tiller/setThinking", { enabled }).catch((error: unknown) => {
      this.log.warn(`Could not turn thinking ${enabled ? "on" : "off"} again: ${errorMessage(error)}`);
    });
  }

  /** Each setting warning once (logged every time): which value is wrong and what is used. */
  private warnAboutSettings(warnings: string[]): void {
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

  /** After every (re)start: resume the session we had, then redraw from the server's state. */
  private async synchronize(): Promise<void> {
    this.stopReason = "crash"; // until a deliberate restart says otherwise
    this.lastFailure = undefined;
    this.lastFailureIsSettings = false;
    this.shownProblems.clear();
    this.connectionEmitter.fire("running");
    const stored = this.context.workspaceState.get<unknown>(SESSION_KEY);
    const previous = this.lastState?.sessionId ?? (typeof stored === "string" ? stored : undefined);
    try {
      if (previous !== undefined) {
        await this.request("tiller/session/resume", { sessionId: previous }).catch((error: unknown) => {
          if (!hasErrorCode(error, METHOD_NOT_FOUND, INVALID_PARAMS)) {
            throw error;
          }
          this.log.warn(`Could not resume session ${previous}: ${errorMessage(error)}`);
        });
      }
      await this.applyThinkingChoice();
      const state = await this.request("tiller/getState", {});
      this.synchronized = true;
      this.remember(state);
      this.stateEmitter.fire(state);
      this.sessionLoadedEmitter.fire(state);
      await this.refreshTodos();
    } catch (error) {
      this.synchronized = true;
      this.log.error(`Synchronizing with the server failed: ${errorMessage(error)}`);
    }
  }

  private errorHandler(): ErrorHandler {
    return {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        const now = Date.now();
        this.crashes = [...this.crashes.filter((t) => now - t < RESTART_WINDOW_MS), now];
        this.stopReason = "crash";
        if (this.crashes.length > MAX_RESTARTS) {
          this.stopReason = "stopped";
          this.connectionEmitter.fire("stopped");
          return {
            action: CloseAction.DoNotRestart,
            message: `The Tiller server crashed ${MAX_RESTARTS + 1} times in 3 minutes and was not restarted. See 'Tiller: Show Logs', then run 'Tiller: Restart Server'.`,
          };
        }
        this.log.warn("The Tiller server exited; restarting it.");
        this.connectionEmitter.fire("starting");
        return { action: CloseAction.Restart, handled: true };
      },
    };
  }

  private failed(message: string, settings = false): void {
    this.log.error(message);
    this.stopReason = "stopped";
    this.lastFailure = message;
    this.lastFailureIsSettings = settings;
    this.connectionEmitter.fire("stopped");
    // The status bar item shows the problem until it is fixed; the toast comes once per problem.
    if (this.shownProblems.has(message)) return;
    this.shownProblems.add(message);
    void vscode.window
      .showErrorMessage(message, "Show Logs", "Open Settings")
      .then((choice) => {
        if (choice === "Show Logs") {
          this.log.show();
        } else if (choice === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
        }
      });
  }
}
