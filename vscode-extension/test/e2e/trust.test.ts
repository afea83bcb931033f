// Issue 34 in code-server with VS Code's Workspace Trust on (its own session: the other files
// run with trust off). The workspace's .claude/settings.json has a UserPromptSubmit hook that
// leaves a mark file and an allow rule for one command. In Restricted Mode the extension runs and
// the server is told the folder is not trusted: the welcome says so, a prompt runs no hook and
// the rule allows nothing. Trusting the folder from the welcome's button (VS Code's Workspace
// Trust editor) reaches the running server at once: the next prompt runs the hook and the rule
// allows the command, in the same server process. (A workspace value of a restricted setting,
// e.g. `.vscode/settings.json` asking for plan mode, is ignored in Restricted Mode and applies
// after the grant with a restart, VS Code announcing the change: not here, where the grant must
// reach the running server.)
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { answerCard, screenshots, send, startChatSession, startNewChat, steps, text, tool, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("trust");
const step = steps(() => session, screenshot);
/** The server process that was told the folder is untrusted, then trusted. */
let serverPid: number | undefined;

const MARK = "hook-ran";
const ALLOWED = "touch allowed.txt";

before(
  async () => {
    session = await startChatSession([], {
      workspaceTrust: true,
      files: {
        ".claude/settings.json": JSON.stringify({
          hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: `touch ${MARK}` }] }] },
          permissions: { allow: [`Bash(${ALLOWED})`] },
        }),
      },
    });
  },
  { timeout: 300_000 },
);

after(async () => {
  await session?.close();
});

test("in Restricted Mode the extension runs and its welcome says the folder is not trusted", { timeout: 120_000 }, async () => {
  await step("restricted-welcome", async (_page, chat) => {
    const line = chat.locator(".welcome .untrusted");
    await line.waitFor({ timeout: 30_000 });
    assert.match(await line.innerText(), /This folder is not trusted \(Restricted Mode\): its \.claude, \.tiller and \.mcp\.json settings run no hooks/);
    await line.locator("button.manage-trust").waitFor();
    serverPid = session.servingPids()[0];
    assert.notEqual(serverPid, undefined, "a server runs in Restricted Mode");
  });
});

test("a prompt in Restricted Mode runs no hook of the folder, and its allow rule allows nothing", { timeout: 180_000 }, async () => {
  await session.fake.load([{ content: [tool("toolu_untrusted", "bash", { command: ALLOWED })] }, { content: [text("Not allowed.")] }]);
  await step("restricted-prompt", async (page, chat) => {
    await send(page, "Touch the file");
    const row = chat.locator('.tool[data-tool-use-id="toolu_untrusted"]');
    // The rule is left out: the command asks (the harness's user denies it).
    const card = row.locator('.card.confirm.command[data-state="pending"]');
    await answerCard(card, "button.deny");
    await chat.locator(".msg.assistant", { hasText: "Not allowed." }).waitFor({ timeout: 30_000 });
    await waitIdle(page);
    assert.match(await row.locator(".decided-by").innerText(), /^ask: /);
    // UserPromptSubmit runs before the prompt reaches the model: the turn has ended without it.
    assert.ok(!existsSync(path.join(session.workspace, MARK)), "the folder's hook did not run");
    assert.ok(!existsSync(path.join(session.workspace, "allowed.txt")));
  });
});

test("trusting the folder from the welcome reaches the running server: the hook runs and the rule allows", { timeout: 180_000 }, async () => {
  await step("trust-granted", async (page, chat) => {
    // A new chat shows the welcome again, with its button.
    await startNewChat(page);
    const manage = chat.locator(".welcome .untrusted button.manage-trust");
    await manage.click({ timeout: 30_000 });
    const trustButton = page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust$/ }).first();
    await trustButton.click({ timeout: 30_000 });
    // The server's state follows the grant: the welcome's line goes.
    await chat.locator(".welcome").waitFor({ timeout: 30_000 });
    await chat.locator(".welcome .untrusted").waitFor({ state: "detached", timeout: 30_000 });
  });
  await session.fake.load([{ content: [tool("toolu_trusted", "bash", { command: ALLOWED })] }, { content: [text("Touched.")] }]);
  await step("trusted-prompt", async (page, chat) => {
    await send(page, "Touch the file now");
    const row = chat.locator('.tool.ok[data-tool-use-id="toolu_trusted"]');
    await row.waitFor({ timeout: 30_000 });
    assert.match(await row.locator(".decided-by").innerText(), /allow: rule: Bash\(touch allowed\.txt\)/);
    await chat.locator(".msg.assistant", { hasText: "Touched." }).waitFor({ timeout: 30_000 });
    await waitIdle(page);
    assert.ok(existsSync(path.join(session.workspace, MARK)), "the folder's hook ran");
    assert.ok(existsSync(path.join(session.workspace, "allowed.txt")));
    assert.deepEqual(session.servingPids(), [serverPid], "the same server: trusted without a restart");
  });
});
