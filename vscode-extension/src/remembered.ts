// What a workspace remembers across servers and window reloads (VS Code's workspace state):
// the session it showed last, resumed by the next server, and the user's thinking choice, put
// back on every new server (which starts with the default).
import type * as vscode from "vscode";
import type { State } from "./protocol";

/** The session this workspace showed last: a window reload (a new extension host) resumes it. */
const SESSION_KEY = "tiller.lastSessionId";
/** The user's last thinking choice (on/off). */
const THINKING_KEY = "tiller.thinkingEnabled";

/** The last `State` the server sent, and the session to resume after a (re)start. */
export class LastSession {
  private last: State | undefined;

  constructor(private readonly workspaceState: vscode.Memento) {}

  get state(): State | undefined {
    return this.last;
  }

  /** The session shown now, else the one this workspace showed last (undefined: none). */
  get toResume(): string | undefined {
    const stored = this.workspaceState.get<unknown>(SESSION_KEY);
    return this.last?.sessionId ?? (typeof stored === "string" ? stored : undefined);
  }

  remember(state: State): void {
    if (this.last?.sessionId !== state.sessionId) {
      void this.workspaceState.update(SESSION_KEY, state.sessionId);
    }
    this.last = state;
  }
}

export class ThinkingChoice {
  constructor(private readonly workspaceState: vscode.Memento) {}

  /** The choice (undefined: never toggled in this workspace). */
  get enabled(): boolean | undefined {
    const value = this.workspaceState.get<unknown>(THINKING_KEY);
    return typeof value === "boolean" ? value : undefined;
  }

  /** A thinking change within one session is the user's choice (a session switch is not). */
  noteState(previous: State | undefined, next: State): void {
    if (previous !== undefined && previous.sessionId === next.sessionId && previous.thinking.enabled !== next.thinking.enabled) {
      void this.workspaceState.update(THINKING_KEY, next.thinking.enabled);
    }
  }
}
