// Issue 34: VS Code keeps its Workspace Trust and tells the server. The trust in the
// initialization options, the grant sent to a running server, the Python chosen in Restricted
// Mode, the launch that keeps the workspace off sys.path, and what the chat and status bar say.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { emptyChat } from "../../src/chat/items";
import { applyEvent, applyState } from "../../src/chat/model";
import { showsWelcome } from "../../src/chat/notices";
import { parseSettings, sameSettings, toInitializationOptions, WEB_TOOL_OFF, type Settings } from "../../src/initOptions";
import { serverArgs } from "../../src/launch";
import { DEFAULT_PYTHON, pythonChoice } from "../../src/pythonChoice";
import { statusTooltip } from "../../src/statusText";
import { trustToTell, untrustedWelcome, VSCODE_TRUST } from "../../src/trustText";
import { eventMaker, IDLE_STATE } from "./fixtures";

const settings: Settings = {
  pythonPath: "",
  model: "",
  permissionMode: "default",
  toolBudget: 20,
  baseUrl: "",
  demoScript: "",
  dataDir: "",
  webSearch: WEB_TOOL_OFF,
  webFetch: WEB_TOOL_OFF,
};

const untrusted = { trusted: false, by: VSCODE_TRUST };
const trusted = { trusted: true, by: VSCODE_TRUST };

interface Manifest {
  capabilities?: { untrustedWorkspaces?: { supported?: unknown; restrictedConfigurations?: string[] } };
  contributes: { configuration: { properties: Record<string, unknown> } };
}

test("Tiller runs in Restricted Mode, where VS Code ignores the workspace's values of the settings that run a program, send the key elsewhere, start more permissive or turn on web search and fetch", () => {
  const manifest = JSON.parse(readFileSync(path.resolve(__dirname, "..", "..", "package.json"), "utf8")) as Manifest;
  const untrusted = manifest.capabilities?.untrustedWorkspaces;
  assert.equal(untrusted?.supported, "limited");
  const restricted = [...(untrusted?.restrictedConfigurations ?? [])].sort();
  assert.deepEqual(restricted, [
    "tiller.baseUrl",
    "tiller.dataDir",
    "tiller.demoScript",
    "tiller.permissionMode",
    "tiller.pythonPath",
    "tiller.webFetch.allowedDomains",
    "tiller.webFetch.blockedDomains",
    "tiller.webFetch.enabled",
    "tiller.webSearch.allowedDomains",
    "tiller.webSearch.blockedDomains",
    "tiller.webSearch.enabled",
  ]);
  for (const name of restricted) assert.ok(name in manifest.contributes.configuration.properties, `${name} is a setting`);
});

test("the server is told VS Code's decision in Restricted Mode and in a trusted workspace", () => {
  assert.deepEqual(toInitializationOptions(settings, true, false).workspaceTrust, { trusted: false, by: "VS Code workspace trust" });
  assert.deepEqual(toInitializationOptions(settings, true, true).workspaceTrust, { trusted: true, by: "VS Code workspace trust" });
});

test("a grant is sent to a server that holds the folder untrusted, and only then", () => {
  assert.deepEqual(trustToTell(true, untrusted), { trusted: true, by: VSCODE_TRUST });
  assert.equal(trustToTell(true, trusted), undefined, "already trusted: nothing to send");
  assert.equal(trustToTell(false, untrusted), undefined, "still Restricted Mode");
  assert.equal(trustToTell(true, undefined), undefined, "a server that reports no trust");
});

test("granting trust restarts nothing when the settings VS Code announces read the same", () => {
  // VS Code names every restricted setting the user's files set (launch.sh sets tiller.pythonPath).
  const before = parseSettings({ pythonPath: "/venv/bin/python", baseUrl: "http://127.0.0.1:9", permissionMode: "acceptEdits" });
  assert.ok(sameSettings(before, parseSettings({ pythonPath: "/venv/bin/python", baseUrl: "http://127.0.0.1:9", permissionMode: "accept edits" })));
  // A workspace value that applies once trusted does restart it.
  assert.ok(!sameSettings(before, parseSettings({ pythonPath: "/venv/bin/python", baseUrl: "http://127.0.0.1:9", permissionMode: "plan" })));
  assert.ok(!sameSettings(before, parseSettings({ pythonPath: "/workspace/.venv/bin/python", baseUrl: "http://127.0.0.1:9", permissionMode: "acceptEdits" })));
  // A value still wrong, but differently, is warned about again.
  assert.ok(!sameSettings(parseSettings({ toolBudget: "x" }), parseSettings({ toolBudget: "y" })));
});

test("in Restricted Mode the Python extension's interpreter and last time's Python are never tried", () => {
  assert.deepEqual(pythonChoice("", false), { first: { kind: "default", python: DEFAULT_PYTHON }, lastGood: false });
  assert.equal(DEFAULT_PYTHON, "python3");
  // What VS Code gives for the setting in Restricted Mode is the user's (or machine's) value.
  assert.deepEqual(pythonChoice("/opt/py/bin/python", false), { first: { kind: "setting", python: "/opt/py/bin/python" }, lastGood: false });
});

test("a trusted workspace may use the Python extension's interpreter and last time's Python", () => {
  assert.deepEqual(pythonChoice("", true), { first: { kind: "pythonExtension" }, lastGood: true });
  assert.deepEqual(pythonChoice("/usr/bin/python3.12", true), { first: { kind: "setting", python: "/usr/bin/python3.12" }, lastGood: true });
});

test("the server starts with the workspace off sys.path, so a repository's tiller/ is never imported", () => {
  assert.deepEqual(serverArgs(true).slice(0, 2), ["-P", "-m"]);
  assert.deepEqual(serverArgs(false).slice(0, 2), ["-P", "-m"]);
});

test("the welcome says the folder is not trusted and what that means; a trusted one says nothing", () => {
  const line = untrustedWelcome(untrusted) ?? "";
  assert.equal(line, "This folder is not trusted (Restricted Mode): its .claude, .tiller and .mcp.json settings run no hooks, MCP or language servers and allow nothing more.");
  assert.equal(untrustedWelcome(trusted), undefined);
  assert.equal(untrustedWelcome(undefined), undefined, "a server that reports no trust");
});

test("the server's untrusted notice at a session's start keeps the welcome view (and its trust button)", () => {
  const ev = eventMaker();
  let model = applyState(emptyChat(), { ...IDLE_STATE, workspaceTrust: untrusted });
  model = applyEvent(model, ev({ type: "notice", text: "This folder is not trusted (VS Code workspace trust): its settings run nothing and widen nothing until you trust it. Left out: .claude/settings.json (hooks, allow rules)." }, null));
  assert.ok(showsWelcome(model.items));
});

test("the status tooltip says whether the folder is trusted and by whom", () => {
  assert.match(statusTooltip({ ...IDLE_STATE, workspaceTrust: untrusted }), /\nfolder not trusted \(VS Code workspace trust\): its \.claude, \.tiller and \.mcp\.json settings run no hooks/);
  assert.match(statusTooltip({ ...IDLE_STATE, workspaceTrust: trusted }), /\nfolder trusted \(VS Code workspace trust\)/);
  assert.doesNotMatch(statusTooltip(IDLE_STATE), /trusted/, "a server that reports no trust");
});
