// Finds a Python that can run `python -m tiller`; when none has it, builds a private venv from
// the server wheel bundled in the VSIX. In Restricted Mode only the user's setting, `python3`
// or that venv: never a Python the workspace chose (pythonChoice.ts).
import { execFile } from "node:child_process";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";
import { DEFAULT_PYTHON, pythonChoice, SAFE_PATH, type PythonSource } from "./pythonChoice";

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
  };
}

export class PythonSetupError extends Error {}

const LAST_GOOD = "tiller.lastGoodPython";

function run(
  command: string,
  args: string[],
  log: vscode.LogOutputChannel,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      if (output !== "") {
        log.debug(`${path.basename(command)} ${args.join(" ")}:\n${output}`);
      }
      if (error) {
        const lastLines = output.split("\n").slice(-3).join(" ");
        reject(new Error(lastLines !== "" ? lastLines : error.message));
      } else {
        resolve();
      }
    });
  });
}

async function hasTiller(python: string, log: vscode.LogOutputChannel): Promise<boolean> {
  try {
    await run(python, [SAFE_PATH, "-c", "import tiller"], log, 30_000);
    return true;
  } catch {
    return false;
  }
}

/** The interpreter selected in the Python extension, when that extension is installed. */
async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const found = api.environments?.getActiveEnvironmentPath(resource)?.path;
    if (found === undefined || found === "") {
      return undefined;
    }
    const stat = await fs.stat(found);
    return stat.isDirectory() ? path.join(found, "bin", "python") : found;
  } catch {
    return undefined;
  }
}

async function firstCandidate(source: PythonSource): Promise<string> {
  switch (source.kind) {
    case "setting":
    case "default":
      return source.python;
    case "pythonExtension":
      return (await pythonExtensionInterpreter()) ?? DEFAULT_PYTHON;
  }
}

async function bundledWheel(extensionPath: string): Promise<string> {
  const dir = path.join(extensionPath, "server-wheel");
  const wheels = (await fs.readdir(dir).catch(() => [])).filter((name) => name.endsWith(".whl"));
  const wheel = wheels.sort().at(-1);
  if (wheel === undefined) {
    throw new PythonSetupError("this build of the extension bundles no server wheel");
  }
  return path.join(dir, wheel);
}

/** Creates (once per bundled wheel) a venv in global storage with the server installed. */
async function privateVenv(
  base: string,
  storagePath: string,
  extensionPath: string,
  log: vscode.LogOutputChannel,
): Promise<string> {
  const wheel = await bundledWheel(extensionPath);
  const venv = path.join(storagePath, "server-venv");
  const python = path.join(venv, process.platform === "win32" ? "Scripts/python.exe" : "bin/python");
  const marker = path.join(venv, "tiller-wheel.txt");
  const installed = await fs.readFile(marker, "utf8").catch(() => "");
  if (installed === path.basename(wheel) && (await hasTiller(python, log))) {
    return python;
  }
  await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: "Tiller: installing its server",
    },
    async (progress) => {
      log.info(`Creating ${venv} with ${base} for ${path.basename(wheel)}`);
      await fs.rm(venv, { recursive: true, force: true });
      await fs.mkdir(storagePath, { recursive: true });
      progress.report({ message: "creating a virtual environment" });
      await run(base, [SAFE_PATH, "-m", "venv", venv], log, 120_000);
      progress.report({ message: "installing the server and its dependencies" });
      await run(
        python,
        [SAFE_PATH, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", wheel],
        log,
        600_000,
      );
      await fs.writeFile(marker, path.basename(wheel));
    },
  );
  return python;
}

/**
 * The Python to launch the server with: `tiller.pythonPath`, else the Python extension's
 * interpreter (trusted workspaces only), else `python3`; when that Python lacks the `tiller`
 * package, the one that worked last time (trusted workspaces only), else a private venv.
 */
export async function resolvePython(
  configured: string,
  workspaceTrusted: boolean,
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
): Promise<string> {
  const choice = pythonChoice(configured, workspaceTrusted);
  const candidate = await firstCandidate(choice.first);
  if (!workspaceTrusted) {
    log.info(`Restricted Mode: trying ${candidate} (your tiller.pythonPath, else python3), then the private environment; never a Python the workspace chose`);
  }
  if (await hasTiller(candidate, log)) {
    log.info(`Using ${candidate}`);
    await context.globalState.update(LAST_GOOD, candidate);
    return candidate;
  }
  // The Python that worked last time (e.g. the one launch.sh set, should the setting be lost)
  // beats building a private environment from the package index.
  const lastGood = choice.lastGood ? context.globalState.get<string>(LAST_GOOD) : undefined;
  if (lastGood !== undefined && lastGood !== candidate && (await hasTiller(lastGood, log))) {
    log.warn(`${candidate} has no 'tiller' package; using ${lastGood}, which had it last time`);
    return lastGood;
  }
  log.info(`${candidate} has no 'tiller' package; using a private environment`);
  try {
    const python = await privateVenv(candidate, context.globalStorageUri.fsPath, context.extensionPath, log);
    log.info(`Using ${python}`);
    return python;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new PythonSetupError(
      `Tiller could not set up its server with '${candidate}' (${reason}). ` +
        "Either set 'tiller.pythonPath' to a Python 3.11+ where the Tiller server is installed, " +
        "or make sure that Python can create virtual environments " +
        "(Debian/Ubuntu: apt install python3-venv) and reach PyPI, then run 'Tiller: Restart Server'.",
    );
  }
}
