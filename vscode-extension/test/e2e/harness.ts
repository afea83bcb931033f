// End-to-end harness: the real Python server, the fake Messages API (tests/fakeapi.py),
// code-server with the built VSIX installed, and Debian's Chromium driven by playwright-core.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { before, beforeEach } from "node:test";
import { chromium, type Browser, type FrameLocator, type Locator, type Page } from "playwright-core";

export const EXT_DIR = path.resolve(__dirname, "..", "..");
export const REPO = path.resolve(EXT_DIR, "..");
const CACHE = path.join(EXT_DIR, ".e2e-cache");
export const ARTIFACTS = path.join(EXT_DIR, ".e2e-artifacts");
const CODE_SERVER = path.join(CACHE, "code-server", "node_modules", ".bin", "code-server");
const PYTHON = process.env.TILLER_PYTHON ?? path.join(REPO, ".venv", "bin", "python");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const VSIX = path.join(EXT_DIR, "dist", "tiller.vsix");

/** The servers' warm template (server/tiller/warm) is this checkout's e2e runs' own: its socket
 *  in a private folder of ours (short: a socket path has ~100 bytes), shared by the sessions one
 *  after another, and gone a minute after the last server (not the user's, kept 15 minutes).
 *  scripts/test.sh makes the folder for its run (`TILLER_E2E_RUNTIME`) and removes it, the
 *  template and code-server's sockets in it at the end; a test file run by hand uses one per
 *  checkout. */
function warmEnv(): Record<string, string> {
  const runtime = process.env.TILLER_E2E_RUNTIME ?? path.join(os.tmpdir(), `tiller-e2e-${createHash("sha256").update(EXT_DIR).digest("hex").slice(0, 12)}`);
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  chmodSync(runtime, 0o700);
  return { XDG_RUNTIME_DIR: runtime, TILLER_WARM_IDLE_SECONDS: "60" };
}

export interface ScriptedResponse {
  content: Array<Record<string, unknown>>;
  chunkDelay?: number;
  textChunk?: number;
  /** Stream this many events, then nothing more until the client goes away (an interrupt). */
  hangAfterEvents?: number;
  error?: Record<string, unknown>;
  stop_reason?: string;
}

/** `count` distinct free ports: all held open at once, so the system cannot hand out one twice
 *  (the fake API, which binds first, would take code-server's port). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<net.Server>((resolve, reject) => {
        const server = net.createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    return typeof address === "object" && address !== null ? address.port : 0;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Probes until `probe` gives a value, every `intervalMs` (a probe of the page costs Chromium and
 *  this process: prefer a locator's waitFor there; a file's existence can be checked often). */
async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs: number, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url);
    return response.status < 500;
  } catch {
    return false;
  }
}

function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      resolve();
    }, 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      process.kill(-child.pid!, "SIGTERM"); // its own process group: code-server and its children
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

/** The fake Messages API on a fixed port; each test loads its own script. */
export class FakeApi {
  private child: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async load(responses: ScriptedResponse[]): Promise<void> {
    await stop(this.child);
    const script = path.join(this.dir, "fake-script.json");
    const portFile = path.join(this.dir, "fake-port");
    rmSync(portFile, { force: true });
    rmSync(this.recordFile, { force: true });
    writeFileSync(script, JSON.stringify({ responses, loop: false }, null, 2));
    const log = path.join(ARTIFACTS, "fakeapi.log");
    this.child = spawn(PYTHON, [path.join(REPO, "tests", "fakeapi.py"), "--script", script, "--port", String(this.port), "--port-file", portFile, "--record", this.recordFile], {
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.child.stderr?.on("data", (data: Buffer) => writeFileSync(log, data, { flag: "a" }));
    // Loaded once per test: its start (~0.2 s) is waited for closely.
    await waitFor("the fake API", () => (existsSync(portFile) && readFileSync(portFile, "utf8").trim() !== "" ? true : undefined), 20_000, 25);
  }

  close(): Promise<void> {
    return stop(this.child);
  }

  private get recordFile(): string {
    return path.join(this.dir, "fake-requests.jsonl");
  }

  /** The bodies of the POST /v1/messages requests answered since the last `load`. */
  messageRequests(): Array<Record<string, unknown>> {
    if (!existsSync(this.recordFile)) return [];
    return readFileSync(this.recordFile, "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as { path: string; status: number; body: Record<string, unknown> })
      .filter((entry) => entry.path === "/v1/messages" && entry.status === 200)
      .map((entry) => entry.body);
  }
}

export interface Session {
  page: Page;
  /** The (first) workspace folder. */
  workspace: string;
  /** Every workspace folder, the first first (one unless `startSession` was given more). */
  folders: string[];
  /** User settings.json as the harness wrote it (tests may rewrite it). */
  settings: Record<string, unknown>;
  settingsFile: string;
  /** code-server's user data dir (settings, logs). */
  userData: string;
  fake: FakeApi;
  /** Pids of the Tiller servers started under this code-server (`python -m tiller --warm`: the
   *  process the extension supervises; the server the template forked for it dies with it). */
  serverPids(): number[];
  /** Pids of the processes that run the servers: the ones the warm template forked for this
   *  code-server, and any server started plainly. Killing one is a server crash (killing its
   *  client only has the template stop the server). */
  servingPids(): number[];
  /** Pids of the processes under this code-server, or under a server forked for it, whose
   *  command line contains `text`. */
  processPids(text: string): number[];
  close(): Promise<void>;
}

/** The processes of the system now: each one's parent and command line. */
function processTable(): { parents: Map<number, number>; commands: Map<number, string> } {
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      parents.set(pid, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      commands.set(pid, readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" "));
    } catch {
      // gone meanwhile
    }
  }
  return { parents, commands };
}

/** What runs under one code-server: the Tiller servers it started, and the processes under them.
 *  The extension starts `python -m tiller --warm`, which has the user's warm template fork the
 *  server and waits for it: that server is the template's child, known as this code-server's by
 *  its working directory (inside `run`). */
class ProcessesUnder {
  private readonly parents: Map<number, number>;
  private readonly commands: Map<number, string>;

  constructor(
    private readonly root: number,
    private readonly run: string,
  ) {
    ({ parents: this.parents, commands: this.commands } = processTable());
  }

  /** Pids whose command line contains `text`, under the code-server or a server forked for it. */
  matching(text: string): number[] {
    return [...this.commands].filter(([pid, cmd]) => cmd.includes(text) && this.descends(pid)).map(([pid]) => pid);
  }

  /** The servers forked for this code-server's clients by the warm template. */
  forked(): number[] {
    return [...this.commands.keys()].filter((pid) => this.forkedHere(pid));
  }

  private forkedHere(pid: number): boolean {
    if (!(this.commands.get(this.parents.get(pid) ?? -1) ?? "").includes("tiller.warm.template")) return false;
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(this.run + path.sep);
    } catch {
      return false; // gone meanwhile
    }
  }

  private descends(pid: number): boolean {
    for (let p = this.parents.get(pid); p !== undefined && p > 1; p = this.parents.get(p)) {
      if (p === this.root || this.forkedHere(p)) return true;
    }
    return false;
  }
}

/** Whether `pid` is a warm client whose server runs elsewhere (it handed its stdio to the
 *  server and keeps /dev/null), not a server started plainly. */
function waitsForForkedServer(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/fd/1`) === "/dev/null";
  } catch {
    return false; // gone meanwhile
  }
}

/** The extensions folder with the built VSIX installed: once per VSIX (a code-server CLI run
 *  costs a few seconds of CPU), shared by the sessions that follow; each has its own profile. */
function installedVsix(userData: string): string {
  const extensions = path.join(CACHE, "extensions");
  const stampFile = path.join(extensions, ".installed-vsix");
  const vsix = statSync(VSIX);
  const stamp = `${vsix.size} ${vsix.mtimeMs}`;
  if (existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) return extensions;
  rmSync(extensions, { recursive: true, force: true });
  mkdirSync(extensions, { recursive: true });
  const install = spawnSync(CODE_SERVER, ["--user-data-dir", userData, "--extensions-dir", extensions, "--install-extension", VSIX, "--force"], {
    encoding: "utf8",
    timeout: 120_000,
  });
  if (install.status !== 0) throw new Error(`installing the VSIX failed:\n${install.stdout}\n${install.stderr}`);
  writeFileSync(stampFile, stamp);
  return extensions;
}

export interface SessionOptions {
  /** VS Code's Workspace Trust on: the workspace opens in Restricted Mode (no start-up prompt)
   *  until the test trusts it. Off by default: every folder is trusted. */
  workspaceTrust?: boolean;
  /** Files written into the workspace before code-server opens it: relative path → text. */
  files?: Readonly<Record<string, string>>;
}

/** Starts code-server on a fresh profile, with the VSIX installed (once per build), and opens the
 *  workspace (`moreFolders`: a `.code-workspace` of the folder `workspace` and these, made in the
 *  run directory, is opened instead). */
export async function startSession(moreFolders: readonly string[] = [], options: SessionOptions = {}): Promise<Session> {
  if (!existsSync(VSIX)) throw new Error(`${VSIX} is missing: run the build first`);
  if (!existsSync(CODE_SERVER)) throw new Error(`${CODE_SERVER} is missing: run scripts/setup.sh first`);
  const run = path.join(CACHE, "run");
  rmSync(run, { recursive: true, force: true });
  const userData = path.join(run, "user-data");
  const workspace = path.join(run, "workspace");
  for (const dir of [path.join(userData, "User"), path.join(userData, "Machine"), workspace, ARTIFACTS]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(workspace, "README.md"), "# e2e workspace\n");
  for (const [name, content] of Object.entries(options.files ?? {})) {
    mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    writeFileSync(path.join(workspace, name), content);
  }
  const folders = [workspace, ...moreFolders.map((name) => path.join(run, name))];
  for (const folder of folders) mkdirSync(folder, { recursive: true });
  const workspaceFile = path.join(run, "e2e.code-workspace");
  writeFileSync(workspaceFile, JSON.stringify({ folders: folders.map((folder) => ({ path: path.basename(folder) })) }, null, 2));
  const opened = moreFolders.length > 0 ? workspaceFile : workspace;
  // Like launch.sh: machine-scoped settings where code-server reads them (in the User file they
  // are dropped as soon as any setting is changed in the UI).
  writeFileSync(
    path.join(userData, "Machine", "settings.json"),
    JSON.stringify(
      {
        "tiller.pythonPath": PYTHON,
        "tiller.dataDir": path.join(run, "tiller-data"),
        // Port forwarding's auto-detection from processes lists every process's descriptors
        // (`ls -l /proc/[0-9]*/fd/[0-9]*`, `ps -A`) every few seconds: nothing here forwards a
        // port, and the scan grows with what runs beside (pytest's servers on CI).
        "remote.autoForwardPorts": false,
        "remote.autoForwardPortsSource": "output",
      },
      null,
      2,
    ),
  );

  const [fakePort = 0, port = 0] = await freePorts(2);
  const fake = new FakeApi(fakePort, run);
  const settingsFile = path.join(userData, "User", "settings.json");
  const trust = options.workspaceTrust === true;
  const settings: Record<string, unknown> = {
        "security.workspace.trust.enabled": trust,
        // Restricted Mode at once, not a modal question (the test trusts the folder itself).
        ...(trust ? { "security.workspace.trust.startupPrompt": "never" } : {}),
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": false,
        "update.mode": "none",
        "chat.commandCenter.enabled": false,
        "git.enabled": false,
        "git.openRepositoryInParentFolders": "never",
        // TypeScript's server (the editor module's diagnostics) as one process: no syntax-only
        // server beside it, no typings installer (nothing to fetch offline): ~3 s of CPU less.
        "typescript.tsserver.useSyntaxServer": "never",
        "typescript.disableAutomaticTypeAcquisition": true,
        "tiller.baseUrl": fake.baseUrl,
        "tiller.toolBudget": 0,
        "tiller.trace.server": "messages",
  };
  writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
  const extensions = installedVsix(userData);

  const configFile = path.join(run, "code-server.yaml");
  writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\n`);
  const codeServer = spawn(
    CODE_SERVER,
    ["--config", configFile, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--user-data-dir", userData, "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check", ...(trust ? [] : ["--disable-workspace-trust"]), "--disable-getting-started-override", opened],
    {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ANTHROPIC_API_KEY: "sk-ant-e2e-fake", ...warmEnv() },
    },
  );
  const serverLog = path.join(ARTIFACTS, "code-server.log");
  codeServer.stdout?.on("data", (data: Buffer) => writeFileSync(serverLog, data, { flag: "a" }));
  codeServer.stderr?.on("data", (data: Buffer) => writeFileSync(serverLog, data, { flag: "a" }));
  await fake.load([]);
  await waitFor("code-server", async () => ((await httpOk(`http://127.0.0.1:${port}/healthz`)) ? true : undefined), 60_000);

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript(STILL_ANIMATIONS);
  page.setDefaultTimeout(30_000);
  const query = moreFolders.length > 0 ? `workspace=${encodeURIComponent(workspaceFile)}` : `folder=${encodeURIComponent(workspace)}`;
  // Waits for the workbench, not for the page's load event (the default, within 30 s: the
  // workbench's scripts take longer than that on a busy 2-core machine).
  await page.goto(`http://127.0.0.1:${port}/?${query}`, { waitUntil: "commit", timeout: 60_000 });
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  return {
    page,
    workspace,
    folders,
    settings,
    settingsFile,
    userData,
    fake,
    serverPids: () => new ProcessesUnder(codeServer.pid ?? -1, run).matching(" -m tiller "),
    servingPids: () => {
      const processes = new ProcessesUnder(codeServer.pid ?? -1, run);
      return [...processes.forked(), ...processes.matching(" -m tiller ").filter((pid) => !waitsForForkedServer(pid))];
    },
    processPids: (text) => new ProcessesUnder(codeServer.pid ?? -1, run).matching(text),
    close: async () => {
      await browser.close().catch(() => undefined);
      await stop(codeServer);
      await fake.close();
    },
  };
}

/** Run in every document the page loads (the workbench, its webviews, after a reload): CSS
 *  animations end as soon as they start. The workbench's spinners, progress bar and
 *  "busy" wiggles are infinite animations: while any runs, Chromium draws 60 frames a second
 *  of the whole 1440×900 workbench in software (a trace of the plain-workspace session: ~80 s
 *  of animations in 139 s). No test looks at an animation; their elements and classes stay.
 *  A zero-length animation still fires its `animationend`. `:root:root` outranks the
 *  workbench's own `!important` durations (`.codicon-loading`'s 1 s). A constructed sheet,
 *  adopted: a webview's CSP may refuse a `<style>` element. */
const STILL_ANIMATIONS = `(() => {
  const adopt = () => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(":root:root *, :root:root *::before, :root:root *::after { animation-duration: 0s !important; animation-delay: 0s !important; }");
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", adopt, { once: true });
  else adopt();
})();`;

/** A module's screenshots, named `<prefix>-NN-<name>.png` (NN counts the module's own; test.sh
 *  empties the folder first). */
export function screenshots(prefix: string): (page: Page, name: string) => Promise<void> {
  let shot = 0;
  return async (page, name) => {
    shot += 1;
    await page.screenshot({ path: path.join(ARTIFACTS, `${prefix}-${String(shot).padStart(2, "0")}-${name}.png`) });
  };
}

/** A module's `step(name, body)`: runs `body` on the session's page and chat, then saves a
 *  screenshot named after the step (`FAILED-<name>` when it throws, which it rethrows). */
export function steps(
  session: () => Session,
  screenshot: (page: Page, name: string) => Promise<void>,
): (name: string, body: (page: Page, chat: FrameLocator) => Promise<void>) => Promise<void> {
  return async (name, body) => {
    const { page } = session();
    try {
      await body(page, chatFrame(page));
      await screenshot(page, name);
    } catch (error) {
      await screenshot(page, `FAILED-${name}`).catch(() => undefined);
      throw error;
    }
  };
}

/** Types `value` in the chat's input and sends it (Enter; with `steer`, Ctrl+Enter). */
export async function send(page: Page, value: string, steer = false): Promise<void> {
  const input = chatFrame(page).locator("#input");
  await input.click();
  await input.fill(value);
  await input.press(steer ? "Control+Enter" : "Enter");
}

/** Content blocks of a scripted model response. */
export function text(value: string): Record<string, unknown> {
  return { type: "text", text: value };
}

export function tool(id: string, name: string, input: Record<string, unknown>): Record<string, unknown> {
  return { type: "tool_use", id, name, input };
}

/** The Tiller status bar item (the one that shows the mode). */
export function statusItem(page: Page): Locator {
  return page.locator('[id="tiller.tiller.tiller.status"]');
}

/** Presses `key` until the quick input shows and returns its input box. A key can be lost: just
 *  after a window reload the focused chat webview may not forward keys to the workbench yet (CI
 *  saw the palette stay hidden for 30 s). After the first miss, the focus is taken out of any
 *  webview frame before pressing again. */
export async function openQuickInput(page: Page, key: string): Promise<Locator> {
  const input = page.locator(".quick-input-widget input");
  let presses = 0;
  await waitFor(`the quick input (${key})`, async () => {
    if (await input.isVisible()) return true;
    if (presses > 0) await page.evaluate(() => (document.activeElement instanceof HTMLIFrameElement ? document.activeElement.blur() : undefined));
    presses += 1;
    await page.keyboard.press(key);
    return input.waitFor({ timeout: 3_000 }).then(() => true, () => undefined);
  }, 60_000);
  return input;
}

/** Runs a command from the palette by its title. */
export async function runCommand(page: Page, title: string): Promise<void> {
  const input = await openQuickInput(page, "F1");
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await input.press("Enter");
}

/** Clicks `button` on a pending card until the card is answered: a click that lands while the
 *  webview re-renders (the diff editor opening, a state arriving) can be lost. */
export async function answerCard(card: Locator, button: string): Promise<void> {
  await card.waitFor({ timeout: 30_000 });
  await waitFor(`the card to take ${button}`, async () => {
    if ((await card.count()) === 0) return true;
    await card.locator(button).click({ timeout: 2_000 }).catch(() => undefined);
    return undefined;
  }, 30_000);
}

/** The side bar chat's document (two nested iframes in code-server; a webview view's outer one
 *  says `purpose=webviewView`). */
export function chatFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready[src*="extensionId=tiller.tiller"][src*="purpose=webviewView"]').frameLocator("iframe#active-frame");
}

/** The outer iframe of the chat's editor tab ("Tiller: Open Chat in Editor"): a webview panel,
 *  whose iframe names no purpose. */
export function editorChatIframe(page: Page): Locator {
  return page.locator('iframe.webview.ready[src*="extensionId=tiller.tiller"]:not([src*="purpose="])');
}

/** The chat's editor tab's document. */
export function editorChatFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready[src*="extensionId=tiller.tiller"]:not([src*="purpose="])').frameLocator("iframe#active-frame");
}

/** Waits until the chat's `data-<name>` (busy, connection, session, mode) reads `value`: one
 *  Playwright wait on a selector (it retries with a backoff to 500 ms) instead of reading the
 *  attribute through both webview frames every 200 ms. */
export async function chatState(page: Page, name: "busy" | "connection" | "session" | "mode", value: string, timeoutMs: number): Promise<void> {
  await chatFrame(page).locator(`body[data-${name}=${JSON.stringify(value)}]`).waitFor({ timeout: timeoutMs });
}

/** Waits for the running turn, if any, to end. */
export async function waitIdle(page: Page): Promise<void> {
  await chatState(page, "busy", "false", 60_000);
}

/** Waits until the status bar item's text contains `text` (case and all). */
export async function statusShows(page: Page, text: string, timeoutMs: number): Promise<void> {
  await statusItem(page).filter({ hasText: new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) }).waitFor({ timeout: timeoutMs });
}

/** Sets the permission mode from the palette and waits for the status bar to show it. */
export async function setMode(page: Page, label: string): Promise<void> {
  await runCommand(page, "Tiller: Set Mode…");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first().click();
  await statusShows(page, label, 10_000);
}

/** A code-server session with the server's first state shown and the chat open and ready. */
export async function startChatSession(moreFolders: readonly string[] = [], options: SessionOptions = {}): Promise<Session> {
  const session = await startSession(moreFolders, options);
  await statusItem(session.page).waitFor({ timeout: 90_000 });
  await statusShows(session.page, "·", 90_000);
  await runCommand(session.page, "Tiller: Open Chat");
  await chatFrame(session.page).locator("#input").waitFor({ timeout: 60_000 });
  return session;
}

let shared: Promise<Session> | undefined;

/** The chat session (plain workspace) that the modules of one test file share, started by the
 *  first that asks: a session's start and close cost ~19 s of CPU on the 2-core CI machine. The
 *  file closes it after its last test (`closeSharedChatSession`). */
function sharedChatSession(): Promise<Session> {
  shared ??= startChatSession();
  return shared;
}

export async function closeSharedChatSession(): Promise<void> {
  const session = await shared?.catch(() => undefined);
  await session?.close();
}

/** For a module of a shared session: before its tests, takes the shared session (started by
 *  the first module that asks), opens a new chat in it (`startNewChat`) and hands it over. */
export function inNewSharedChat(take: (session: Session) => void): void {
  before(
    async () => {
      const session = await sharedChatSession();
      await startNewChat(session.page);
      take(session);
    },
    { timeout: 300_000 },
  );
}

/** For a module of a shared session whose tests must not depend on one another's order: takes
 *  the shared session before its tests and opens a new chat in it (`startNewChat`) before each
 *  test, so no answer, grant or mode of one test carries over to the next. */
export function inNewSharedChatEachTest(take: (session: Session) => void): void {
  let session: Session | undefined;
  before(
    async () => {
      session = await sharedChatSession();
      take(session);
    },
    { timeout: 300_000 },
  );
  beforeEach(
    async () => {
      if (session !== undefined) await startNewChat(session.page);
    },
    { timeout: 120_000 },
  );
}

/** What each module of a shared session starts from, whatever the one before left: no quick
 *  input open, the server running and idle, a new chat (its welcome view shown) in "ask before
 *  edits". */
export async function startNewChat(page: Page): Promise<void> {
  const chat = chatFrame(page);
  const quickInput = page.locator(".quick-input-widget");
  if (await quickInput.isVisible()) {
    await page.keyboard.press("Escape");
    await quickInput.waitFor({ state: "hidden", timeout: 10_000 });
  }
  await chatState(page, "connection", "running", 60_000);
  await waitIdle(page);
  const previous = (await chat.locator("body").getAttribute("data-session")) ?? "";
  await runCommand(page, "Tiller: New Chat");
  await chat.locator(`body:not([data-session=${JSON.stringify(previous)}]):not([data-session=""])`).waitFor({ timeout: 20_000 });
  await chat.locator(".welcome").waitFor({ timeout: 20_000 });
  // A new chat keeps the mode of the one before.
  if ((await chat.locator("body").getAttribute("data-mode")) !== "default") await setMode(page, "ask before edits");
}

export { waitFor };
