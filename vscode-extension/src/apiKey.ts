// The Anthropic API key in SecretStorage. It only ever leaves as the server's environment.
import * as vscode from "vscode";

const SECRET = "tiller.anthropicApiKey";

export class ApiKeyStore {
  readonly onDidChange: vscode.Event<void>;

  constructor(private readonly secrets: vscode.SecretStorage) {
    this.onDidChange = (listener, thisArgs, disposables) =>
      secrets.onDidChange(
        (event) => {
          if (event.key === SECRET) {
            listener.call(thisArgs);
          }
        },
        undefined,
        disposables,
      );
  }

  async get(): Promise<string | undefined> {
    const key = await this.secrets.get(SECRET);
    return key !== undefined && key !== "" ? key : undefined;
  }

  /** Asks for the key; an empty answer removes it. Returns false when the user cancelled. */
  async prompt(): Promise<boolean> {
    const value = await vscode.window.showInputBox({
      title: "Tiller: Anthropic API key",
      prompt: "Stored in VS Code's secret storage and passed to the server as ANTHROPIC_API_KEY. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
      placeHolder: "sk-ant-…",
    });
    if (value === undefined) {
      return false;
    }
    if (value.trim() === "") {
      await this.secrets.delete(SECRET);
    } else {
      await this.secrets.store(SECRET, value.trim());
    }
    return true;
  }
}
