// Palette commands. Each one is a request to the server (or a UI step); results show up
// through the server's notifications, never through local bookkeeping.
import * as vscode from "vscode";
import type { ApiKeyStore } from "./apiKey";
import { CHAT_VIEW_ID, type ChatProvider } from "./chat/provider";
import { errorMessage, hasErrorCode, METHOD_NOT_FOUND, MODES, type Mode, type SessionInfo, type State } from "./protocol";
import type { TillerServer } from "./server";
import { MODE_LABELS } from "./statusText";
import { TODOS_VIEW_ID } from "./todos";

interface Deps {
  server: TillerServer;
  chat: ChatProvider;
  apiKey: ApiKeyStore;
  log: vscode.LogOutputChannel;
}

function unsupported(error: unknown, what: string): boolean {
  if (hasErrorCode(error, METHOD_NOT_FOUND)) {
    void vscode.window.showInformationMessage(`Tiller: this server does not support ${what} yet.`);
    return true;
  }
  return false;
}

export function registerCommands({ server, chat, apiKey, log }: Deps): vscode.Disposable {
  /** Loads a session the server switched to (new/resume/fork) into the chat. */
  const loaded = async (state: State): Promise<void> => {
    await chat.loadTranscript(state);
    await server.refreshTodos();
  };

  const commands: Record<string, () => Thenable<unknown>> = {
    "tiller.openChat": async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      chat.focusInput();
    },
    "tiller.newSession": async () => {
      await loaded(await server.request("tiller/session/new", {}));
    },
    "tiller.resumeSession": async () => {
      let sessions: SessionInfo[];
      try {
        ({ sessions } = await server.request("tiller/session/list", {}));
      } catch (error) {
        if (unsupported(error, "listing sessions")) return;
        throw error;
      }
      if (sessions.length === 0) {
        void vscode.window.showInformationMessage("Tiller: no saved sessions yet.");
        return;
      }
      const current = server.state?.sessionId;
      const picked = await vscode.window.showQuickPick(
        sessions.map((session) => ({
          label: session.title !== "" ? session.title : "(untitled)",
          description: `${session.turns} turn(s)${session.sessionId === current ? " · current" : ""}`,
          detail: `${new Date(session.updatedAt).toLocaleString()}${session.parentId ? ` · forked from ${session.parentId}` : ""}`,
          sessionId: session.sessionId,
        })),
        { title: "Tiller: Resume Session", placeHolder: "Pick a session to resume" },
      );
      if (picked !== undefined) {
        await loaded(await server.request("tiller/session/resume", { sessionId: picked.sessionId }));
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
    "tiller.cycleMode": () => server.request("tiller/cycleMode", {}),
    "tiller.setMode": async () => {
      const picked = await vscode.window.showQuickPick(
        MODES.map((mode) => ({ label: MODE_LABELS[mode], description: mode === server.state?.mode ? "current" : mode, mode })),
        { title: "Tiller: Set Mode" },
      );
      if (picked !== undefined) {
        await server.request("tiller/setMode", { mode: picked.mode satisfies Mode });
      }
    },
    "tiller.switchModel": async () => {
      const { models, current } = await server.request("tiller/listModels", {});
      const picked = await vscode.window.showQuickPick(
        models.map((model) => ({
          label: model.displayName ?? model.id,
          description: model.id === current ? `${model.id} · current` : model.id,
          id: model.id,
        })),
        { title: "Tiller: Switch Model", placeHolder: "Applies from the next turn" },
      );
      if (picked !== undefined) {
        await server.request("tiller/setModel", { model: picked.id });
      }
    },
    "tiller.toggleThinking": async () => {
      const enabled = !(server.state?.thinking.enabled ?? false);
      const result = await server.request("tiller/setThinking", { enabled });
      void vscode.window.setStatusBarMessage(`Tiller: thinking ${result.enabled ? `on (${result.budgetTokens} tokens)` : "off"}`, 3000);
    },
    "tiller.interrupt": () => server.request("tiller/interrupt", {}),
    "tiller.clearQueue": () => server.request("tiller/clearQueue", {}),
    "tiller.showTodos": () => vscode.commands.executeCommand(`${TODOS_VIEW_ID}.focus`),
    "tiller.setApiKey": () => apiKey.prompt(),
    "tiller.showLogs": async () => log.show(),
    "tiller.restartServer": () => server.restart(),
  };

  return vscode.Disposable.from(
    ...Object.entries(commands).map(([id, run]) =>
      vscode.commands.registerCommand(id, async () => {
        try {
          await run();
        } catch (error) {
          log.error(`${id}: ${errorMessage(error)}`);
          void vscode.window.showErrorMessage(`Tiller: ${errorMessage(error)}`);
        }
      }),
    ),
  );
}
