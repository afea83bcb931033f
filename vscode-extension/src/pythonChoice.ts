// Which Python may run the server, and how it is invoked. Pure: no vscode import, so it is
// unit-tested (python.ts does the looking up and the running).

/** The Python looked up on the extension host's PATH (the user's environment, not the
 *  workspace's) when no setting names one. */
export const DEFAULT_PYTHON = "python3";

/** Before `-m`/`-c`: Python 3.11's "safe path" keeps the working directory (the workspace)
 *  off `sys.path`, so a `tiller/` folder or `tiller.py` in a repository is never imported in
 *  place of the server. The server needs 3.11+ anyway. */
export const SAFE_PATH = "-P";

/** Where the first Python to try comes from. */
export type PythonSource =
  /** `tiller.pythonPath`: in Restricted Mode VS Code gives only its user (and machine) value,
   *  the setting being one of package.json's `restrictedConfigurations`. */
  | { kind: "setting"; python: string }
  /** The interpreter selected in the Python extension, which the workspace may choose (a
   *  `.venv/bin/python`, `python.defaultInterpreterPath` in `.vscode/settings.json`). */
  | { kind: "pythonExtension" }
  | { kind: "default"; python: string };

export interface PythonChoice {
  first: PythonSource;
  /** Whether the Python that worked last time may stand in for one that lacks the server: not
   *  in Restricted Mode, where it may have been this workspace's choice on an earlier day. */
  lastGood: boolean;
}

/** `configured`: `tiller.pythonPath` as read (trimmed); `workspaceTrusted`:
 *  `vscode.workspace.isTrusted`. Untrusted, nothing the workspace chose runs the server. */
export function pythonChoice(configured: string, workspaceTrusted: boolean): PythonChoice {
  const first: PythonSource =
    configured !== ""
      ? { kind: "setting", python: configured }
      : workspaceTrusted
        ? { kind: "pythonExtension" }
        : { kind: "default", python: DEFAULT_PYTHON };
  return { first, lastGood: workspaceTrusted };
}
