// Owns the server process: launch (Python resolution, env with the API key: client.ts; the warm
// start with a plain fallback: launch.ts), the typed request/notification surface, restart on
// crash (resume the last session) and on demand. Why a start failed: startProblems.ts.
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State as ClientState,
  type CancellationToken,
  type ErrorHandler,
  type StaticFeature,
} from "vscode-languageclient/node";
import { type ApiKeyStore } from "./apiKey";
import { createClient, type ProviderShown } from "./client";
import { sameSettings, type CheckedSettings } from "./initOptions";
import { WarmChoice } from "./launch";
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
import { LastSession, ThinkingChoice } from "./remembered";
import { CrashWindow, Debounce, Lifecycle } from "./restarts";
import { readSettingsChecked, validateSettings } from "./settings";
import { StartProblems } from "./startProblems";

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
const RESTART_WINDOW_MS = 3 * 60 * 1000;

export class TillerServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The last `State` the server sent, and the session a new server resumes. */
  private readonly last: LastSession;
  /** Crashes restart the server, unless it crashed too often lately. */
  private readonly crashes = new CrashWindow(MAX_RESTARTS, RESTART_WINDOW_MS);
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
  /** Why the server did not start, and setting warnings, each shown once. */
  private readonly problems: StartProblems;
  /** The user's thinking choice, put back on every new server. */
  private readonly thinking: ThinkingChoice;

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
  ) {
    this.problems = new StartProblems(log);
    this.thinking = new ThinkingChoice(context.workspaceState);
    this.last = new LastSession(context.workspaceState);
  }

  /** Why the server last failed to start (the chat and the status bar show it). */
  get lastFailure(): string | undefined {
    return this.problems.lastFailure;
  }

  /** Whether that failure is a setting's value (the status bar then opens the settings). */
  get lastFailureIsSettings(): boolean {
    return this.problems.lastFailureIsSettings;
  }

  /** Which provider the running server was started with (shown in the status tooltip). */
  provider: ProviderShown | undefined;

  /** The last `State` the server sent (the server is the source of truth; this is its echo). */
  get state(): State | undefined {
    return this.last.state;
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
    this.problems.warnAboutSettings(warnings);
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
    const warm = this.warmChoice.warm;
    const { client, provider } = createClient(
      { python, warm, settings, key, trusted },
      {
        log: this.log,
        features: this.features,
        errorHandler: this.errorHandler(),
        initializationFailed: (message) => this.failed(message),
      },
    );
    this.provider = provider;
    this.client = client;
    this.synchronized = false;
    this.wire(client);
    await this.startClient(client, warm);
  }

  /** The client's notifications (passed on once synchronized), the server's requests, and the
   *  synchronization once it runs. */
  private wire(client: LanguageClient): void {
    listen(client, "tiller/state", (state) => {
      if (!this.synchronized) return;
      this.thinking.noteState(this.last.state, state);
      this.last.remember(state);
      this.stateEmitter.fire(state);
    });
    listen(client, "tiller/todos", ({ todos }) => this.synchronized && this.todosEmitter.fire(todos));
    listen(client, "tiller/event", (event) => this.synchronized && this.eventEmitter.fire(event));
    for (const install of this.requestHandlers) {
      install(client);
    }
    client.onDidChangeState(({ newState }) => {
      if (newState === ClientState.Running && this.client === client) {
        void this.synchronize();
      }
    });
  }

  /** Starts the client; a warm launch that fails to start is launched again plainly. */
  private async startClient(client: LanguageClient, warm: boolean): Promise<void> {
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

  /** Puts the user's thinking choice back on a new server (which starts with the default). */
  private async applyThinkingChoice(): Promise<void> {
    const enabled = this.thinking.enabled;
    if (enabled === undefined) return;
    await this.request("tiller/setThinking", { enabled }).catch((error: unknown) => {
      this.log.warn(`Could not turn thinking ${enabled ? "on" : "off"} again: ${errorMessage(error)}`);
    });
  }

  /** After every (re)start: resume the session we had, then redraw from the server's state. */
  private async synchronize(): Promise<void> {
    this.stopReason = "crash"; // until a deliberate restart says otherwise
    this.problems.clear();
    this.connectionEmitter.fire("running");
    const previous = this.last.toResume;
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
      this.last.remember(state);
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
        this.stopReason = "crash";
        if (!this.crashes.crashed(Date.now())) {
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

  /** The server did not start: the connection stops, with the problem said. */
  private failed(message: string, settings = false): void {
    this.stopReason = "stopped";
    this.problems.record(message, settings);
    this.connectionEmitter.fire("stopped");
    this.problems.toastOnce(message);
  }
}

/** A typed handler of a server notification. */
function listen<M extends ServerNotificationMethod>(client: LanguageClient, method: M, handler: (params: ServerNotifications[M]) => void): void {
  client.onNotification(method, handler);
}
