// Issue 20 end to end in code-server: a compound command's card shows how the rules split it
// and which rule matched each part, "Always allow" keeps exactly the parts shown, every tool row
// names what decided it, the Permissions view lists the rules, Ctrl+Enter steers a running turn.
// Run in the shared session of plain-workspace.test.ts. The tests do not depend on one another's
// order: each starts from a new chat (no grant of the session before) and a workspace without
// the rule files and the files the tests' commands make, writes the rules it needs, and takes
// back all of it (the server reads the rule files afresh for every call: a rule left here would
// decide the calls of the tests and modules that follow).
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { answerCard, chatFrame, inNewSharedChatEachTest, runCommand, screenshots, send, text, tool, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("rules");

/** The workspace's rule files, as the server reads them, and where Always allow keeps a rule. */
const WORKSPACE_RULES = path.join(".claude", "settings.json");
const LOCAL_RULES = path.join(".tiller", "settings.local.json");
/** What the tests write, and what their commands make. */
const MADE = [".claude", LOCAL_RULES, "out", "made.txt", "go"];

function removeWhatTestsMake(): void {
  const workspace = session?.workspace;
  if (workspace === undefined) return; // the session never started
  for (const made of MADE) rmSync(path.join(workspace, made), { recursive: true, force: true });
}

/** A settings file (relative to the workspace) whose rules allow `allow`. */
function writeAllowRules(file: string, allow: string[]): void {
  const full = path.join(session.workspace, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, JSON.stringify({ permissions: { allow } }));
}

export function rulesTests(): void {
  inNewSharedChatEachTest((shared) => (session = shared));
  beforeEach(removeWhatTestsMake);
  afterEach(removeWhatTestsMake);

  test("a compound command's card shows the split and its rules; Always allow keeps exactly the parts shown", { timeout: 180_000 }, async () => {
    // Not git: the e2e workspace lies inside the checkout's repository, whose config git would
    // read from outside the workspace, so a rule-allowed git command there is asked (security.md).
    writeAllowRules(WORKSPACE_RULES, ["Bash(mkdir -p out:*)"]);
    await session.fake.load([{ content: [tool("toolu_split", "bash", { command: "mkdir -p out && touch made.txt" })] }, { content: [text("Made.")] }]);
    const page = session.page;
    const chat = chatFrame(page);
    await send(page, "Make the file");
    const row = chat.locator('.tool[data-tool-use-id="toolu_split"]');
    const card = row.locator('.card.confirm.command[data-state="pending"]');
    await card.waitFor({ timeout: 30_000 });
    const allowed = card.locator(".segment.allow");
    assert.match(await allowed.innerText(), /mkdir -p out[\s\S]*rule: Bash\(mkdir -p out:\*\) \(workspace \.claude\/settings\.json\)/);
    assert.match(await card.locator(".segment.mode").innerText(), /touch made\.txt[\s\S]*no rule/);
    assert.match(await row.locator(".decided-by").innerText(), /ask: mode default/);
    await screenshot(page, "segments-card");
    await answerCard(card, "button.allow-always");
    await chat.locator('.tool.ok[data-tool-use-id="toolu_split"]').waitFor({ timeout: 30_000 });
    await waitIdle(page);
    const kept = JSON.parse(readFileSync(path.join(session.workspace, LOCAL_RULES), "utf8")) as { permissions: { allow: string[] } };
    assert.deepEqual(kept.permissions.allow, ["Bash(touch made.txt)"]);
  });

  test("a call allowed by rules names each rule that allowed it, and the Permissions view lists them by scope", { timeout: 180_000 }, async () => {
    // Rules of two scopes: the workspace's, and a local one as Always allow keeps it.
    writeAllowRules(WORKSPACE_RULES, ["Bash(mkdir -p out:*)"]);
    writeAllowRules(LOCAL_RULES, ["Bash(touch made.txt)"]);
    await session.fake.load([{ content: [tool("toolu_again", "bash", { command: "touch made.txt && mkdir -p out" })] }, { content: [text("Again.")] }]);
    const page = session.page;
    const chat = chatFrame(page);
    await send(page, "Once more");
    const row = chat.locator('.tool.ok[data-tool-use-id="toolu_again"]');
    await row.waitFor({ timeout: 30_000 });
    assert.match(await row.locator(".decided-by").innerText(), /allow: rule: Bash\(touch made\.txt\) \(local \.tiller\/settings\.local\.json\); rule: Bash\(mkdir -p out:\*\)/);
    await waitIdle(page);
    await runCommand(page, "Tiller: Refresh Permission Rules");
    await runCommand(page, "Tiller: Focus on Permissions View");
    const tree = page.locator('.monaco-list-row', { hasText: "Bash(touch made.txt)" });
    await tree.first().waitFor({ timeout: 30_000 });
    await page.locator('.monaco-list-row', { hasText: "Bash(mkdir -p out:*)" }).first().waitFor({ timeout: 10_000 });
    await screenshot(page, "permissions-view");
  });

  test("Ctrl+Enter while the agent works steers the running turn; the chat says when it landed", { timeout: 180_000 }, async () => {
    const gate = path.join(session.workspace, "go");
    await session.fake.load([{ content: [tool("toolu_wait", "bash", { command: "until [ -e go ]; do sleep 0.05; done" })] }, { content: [text("Steered answer.")] }]);
    const page = session.page;
    const chat = chatFrame(page);
    await send(page, "Wait for it");
    const card = chat.locator('.tool[data-tool-use-id="toolu_wait"] .card.confirm.command[data-state="pending"]');
    await card.waitFor({ timeout: 30_000 });
    await answerCard(card, "button.allow");
    await send(page, "use tabs, not spaces", true);
    await chat.locator(".notice", { hasText: "Steering: use tabs" }).waitFor({ timeout: 30_000 });
    writeFileSync(gate, "");
    await chat.locator(".notice", { hasText: "Steered: use tabs, not spaces" }).waitFor({ timeout: 60_000 });
    await waitIdle(page);
    assert.ok((await chat.locator(".queue", { hasText: "use tabs" }).count()) === 0, "steered, not queued");
    await screenshot(page, "steered");
  });
}
