// Palette commands, by family: sessions (new, history, rewind, fork), modes, models and
// thinking, the running turn, and the views, key and server. (The permission rules' commands
// are permissionsView.ts's, the MCP servers' mcpView.ts's.) Each one is a request to the server
// (or a UI step); results show up through the server's notifications, never through local
// bookkeeping.
import * as vscode from "vscode";
import type { ApiKeyStore } from "./apiKey";
import { addNotice } from "./chat/notices";
import { thinkingWords } from "./chat/words";
import { CHAT_VIEW_ID, type ChatProvider } from "./chat/provider";
import { modelPickItems, type ModelPickItem } from "./modelPick";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, MODES, type CheckpointInfo, type Mode, type ModelInfo, type SessionInfo, type State } from "./protocol";
import { age, sessionPickItem } from "./sessionsText";
import type { TillerServer } from "./server";
import { MODE_DESCRIPTIONS, MODE_LABELS } from "./statusText";
import { TODOS_VIEW_ID } from "./todos";

interface Deps {
  server: TillerServer;
  chat: ChatProvider;
  apiKey: ApiKeyStore;
  log: vscode.LogOutputChannel;
}

/** Command ids and what they run. */
type Commands = Record<string, () => Thenable<unknown>>;

export function registerCommands(deps: Deps): vscode.Disposable {
  const commands: Commands = { ...sessionCommands(deps), ...modeCommands(deps), ...turnCommands(deps), ...viewCommands(deps) };
  return vscode.Disposable.from(
    ...Object.entries(commands).map(([id, run]) =>
      vscode.commands.registerCommand(id, async () => {
        try {
          await run();
        } catch (error) {
          deps.log.error(`${id}: ${errorMessage(error)}`);
          void vscode.window.showErrorMessage(`Tiller: ${errorMessage(error)}`);
        }
      }),
    ),
  );
}

function unsupported(error: unknown, what: string): boolean {
  if (hasErrorCode(error, METHOD_NOT_FOUND)) {
    void vscode.window.showInformationMessage(`Tiller: this server does not support ${what} yet.`);
    return true;
  }
  return false;
}

/** New chat, History (resume), rewind to a checkpoint, fork. */
function sessionCommands({ server, chat }: Deps): Commands {
  /** Loads a session the server switched to (new/resume/fork) into the chat. */
  const loaded = async (state: State): Promise<void> => {
    await chat.loadTranscript(state);
    await server.refreshTodos();
  };
  return {
    "tiller.newSession": async () => {
      await loaded(await server.request("tiller/session/new", {}));
    },
    "tiller.resumeSession": () => pickSession(server, loaded, false),
    "tiller.history": () => pickSession(server, loaded, false),
    "tiller.checkpoints": async () => {
      const turnId = await pickCheckpoint(server);
      if (turnId !== undefined) {
        await chat.rewind(turnId);
      }
    },
    "tiller.forkSession": async () => {
      try {
        await loaded(await server.request("tiller/session/fork", {}));
        void vscode.window.showInformationMessage("Tiller: forked the session; you are now in the copy.");
      } catch (error) {
        if (!unsupported(error, "forking sessions")) throw error;
      }
    },
  };
}

/** The History picker: this workspace's sessions, newest first; "all folders" on demand. */
async function pickSession(server: TillerServer, loaded: (state: State) => Promise<void>, all: boolean): Promise<void> {
  let sessions: SessionInfo[];
  try {
    ({ sessions } = await server.request("tiller/session/list", all ? { workspace: "all" } : {}));
  } catch (error) {
    if (unsupported(error, "listing sessions")) return;
    throw error;
  }
  const current = server.state?.sessionId;
  const now = Date.now();
  type Pick = vscode.QuickPickItem & { sessionId?: string; showAll?: boolean };
  const items: Pick[] = sessions.map((session) => ({ ...sessionPickItem(session, current, now), sessionId: session.sessionId }));
  if (!all) {
    items.push({ label: "", kind: vscode.QuickPickItemKind.Separator }, { label: "$(folder-library) Show chats of all folders…", showAll: true });
  }
  const picked = await vscode.window.showQuickPick<Pick>(items, {
    title: all ? "Tiller: Chat History (all folders)" : "Tiller: Chat History (this folder)",
    placeHolder: sessions.length === 0 ? "No saved chats here yet" : "Pick a chat to resume",
    matchOnDetail: true,
  });
  if (picked?.showAll === true) {
    await pickSession(server, loaded, true);
  } else if (picked?.sessionId !== undefined) {
    await loaded(await server.request("tiller/session/resume", { sessionId: picked.sessionId }));
  }
}

/** The chat's checkpoints, newest first: the turn picked to rewind to before (undefined: none). */
async function pickCheckpoint(server: TillerServer): Promise<string | undefined> {
  let checkpoints: CheckpointInfo[];
  try {
    ({ checkpoints } = await server.request("tiller/checkpoints", {}));
  } catch (error) {
    if (unsupported(error, "checkpoints")) return undefined;
    throw error;
  }
  const now = Date.now();
  const picked = await vscode.window.showQuickPick(
    [...checkpoints].reverse().map((checkpoint) => ({
      label: checkpoint.prompt.split("\n")[0] || "(empty prompt)",
      description: [`this prompt touched ${checkpoint.changedFiles} file(s)`, age(checkpoint.createdAt, now)].filter(Boolean).join(" · "),
      turnId: checkpoint.turnId,
    })),
    {
      title: "Tiller: Rewind to Before a Prompt",
      placeHolder: checkpoints.length === 0 ? "No checkpoints in this chat yet" : "Pick a prompt: you see which files would be reverted, deleted or restored before anything happens",
    },
  );
  return picked?.turnId;
}

/** The permission mode, the model and extended thinking. */
function modeCommands({ server, chat }: Deps): Commands {
  return {
    "tiller.cycleMode": () => server.request("tiller/cycleMode", {}),
    "tiller.setMode": async () => {
      const picked = await vscode.window.showQuickPick(
        MODES.map((mode) => ({ label: MODE_LABELS[mode], description: mode === server.state?.mode ? "current" : MODE_DESCRIPTIONS[mode], mode })),
        { title: "Tiller: Set Mode" },
      );
      if (picked !== undefined) {
        await server.request("tiller/setMode", { mode: picked.mode satisfies Mode });
      }
    },
    "tiller.switchModel": async () => {
      const { models, current } = await server.request("tiller/listModels", {});
      const picked = await pickModel(models, current);
      if (picked !== undefined) {
        await server.request("tiller/setModel", { model: picked });
      }
    },
    "tiller.toggleThinking": async () => {
      const enabled = !(server.state?.thinking.enabled ?? false);
      const result = await server.request("tiller/setThinking", { enabled });
      const words = `Thinking: ${thinkingWords(result)}`;
      // Visible where the user looks: a line in the chat, and the status bar for a moment.
      chat.update((model) => addNotice(model, words));
      void vscode.window.setStatusBarMessage(`$(lightbulb) Tiller: ${words.toLowerCase()}`, 4000);
    },
  };
}

/** The model picker: the server's list, and any id typed in ("Use <id>"). */
function pickModel(models: ModelInfo[], current: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<ModelPickItem & vscode.QuickPickItem>();
    pick.title = "Tiller: Switch Model";
    pick.placeholder = "Pick a model or type a model id (applies from the next turn)";
    pick.items = modelPickItems(models, current, "");
    let chosen: string | undefined;
    pick.onDidChangeValue((value) => {
      pick.items = modelPickItems(models, current, value);
    });
    pick.onDidAccept(() => {
      chosen = pick.selectedItems[0]?.id ?? pick.activeItems[0]?.id;
      pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve(chosen);
    });
    pick.show();
  });
}

/** The running turn and the prompts queued behind it. */
function turnCommands({ server }: Deps): Commands {
  return {
    // Only the turn running now: a late Escape never cancels the next queued turn.
    "tiller.interrupt": () => {
      const turnId = server.state?.turnId;
      return server.request("tiller/interrupt", turnId ? { turnId } : {});
    },
    "tiller.clearQueue": () => server.request("tiller/clearQueue", {}),
  };
}

/** The chat and todo views, the API key, the logs and the server itself. */
function viewCommands({ server, chat, apiKey, log }: Deps): Commands {
  return {
    "tiller.openChat": async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      chat.focusInput();
    },
    "tiller.openChatInEditor": async () => chat.openInEditor(),
    "tiller.showTodos": () => vscode.commands.executeCommand(`${TODOS_VIEW_ID}.focus`),
    "tiller.setApiKey": () => apiKey.prompt(),
    "tiller.showLogs": async () => log.show(),
    "tiller.restartServer": () => server.restart(),
  };
}
