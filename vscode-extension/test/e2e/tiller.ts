// End to end in a real VS Code (code-server) with the built VSIX, the real Python server and
// the fake Messages API: the basics (streaming, queue, modes, plan, diff, interrupts, todos,
// errors, model, API key, crash, sessions). Run in the shared session of
// plain-workspace.test.ts, in order; each test loads its own script into the fake.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import type { Page } from "playwright-core";
import { answerCard, chatFrame, chatState, inNewSharedChat, runCommand, screenshots, send, startNewChat, statusItem, statusShows, steps, waitFor, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("tiller");

const step = steps(() => session, screenshot);

async function status(page: Page): Promise<string> {
  return (await statusItem(page).innerText()).trim();
}

/** The first file under `dir` (settings, logs, traces) whose text contains `needle`. */
function grepTree(dir: string, needle: string): string | undefined {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = grepTree(file, needle);
      if (found !== undefined) return found;
    } else if (entry.isFile() && readFileSync(file).includes(needle)) {
      return file;
    }
  }
  return undefined;
}

export function tillerTests(): void {
  inNewSharedChat((shared) => (session = shared));

  test("a prompt streams into the chat as markdown", { timeout: 120_000 }, async () => {
    const answer = "Hello from the **fake model**. " + "This answer arrives in small pieces. ".repeat(6);
    await session.fake.load([{ content: [{ type: "text", text: answer }], chunkDelay: 0.08, textChunk: 8 }]);
    await step("prompt-streams", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Say hello");
      await chat.locator(".msg.user", { hasText: "Say hello" }).waitFor();
      await chat.locator(".msg.assistant.streaming").waitFor({ timeout: 30_000 });
      await screenshot(page, "prompt-streaming");
      await chat.locator(".msg.assistant:not(.streaming)", { hasText: "small pieces" }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const assistant = chat.locator(".msg.assistant").last();
      assert.equal(await assistant.locator("strong").innerText(), "fake model");
      assert.match(await assistant.innerText(), /This answer arrives in small pieces\.\s*$/);
    });
  });

  test("queued prompts are shown and can be cleared", { timeout: 120_000 }, async () => {
    // The first answer streams a little and then hangs: only the interrupt ends that turn, so
    // the queue is looked at and cleared while it runs, however slow the machine (a timed answer
    // could end first and start the queued prompt: CI saw that under load).
    await session.fake.load([
      { content: [{ type: "text", text: "A slow answer. ".repeat(20) }], textChunk: 10, hangAfterEvents: 3 },
      { content: [{ type: "text", text: "The fourth answer." }] },
    ]);
    await step("queue-cleared", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Take your time");
      await chat.locator(".msg.assistant.streaming").waitFor({ timeout: 30_000 });
      await send(page, "Second prompt");
      await send(page, "Third prompt");
      const queue = chat.locator("#queue");
      await queue.locator(".queue-title", { hasText: "Queued (2)" }).waitFor({ timeout: 10_000 });
      assert.match(await queue.innerText(), /Second prompt[\s\S]*Third prompt/);
      await statusShows(page, "2 queued", 10_000);
      await screenshot(page, "queue-shown");
      await queue.locator("button.clear-queue").click();
      await queue.waitFor({ state: "hidden", timeout: 10_000 });
      // Queued prompts would run after the turn, however it ends: interrupt it, then one more
      // prompt, and the model has seen only the first and that one.
      await chat.locator("#input").click();
      await chat.locator("#input").press("Escape");
      await chat.locator(".turn-end.interrupted").last().waitFor({ timeout: 30_000 });
      await waitIdle(page);
      await send(page, "Fourth prompt");
      await chat.locator(".msg.assistant", { hasText: "The fourth answer." }).waitFor({ timeout: 30_000 });
      const sent = JSON.stringify(session.fake.messageRequests().at(-1)?.messages);
      assert.ok(sent.includes("Take your time") && sent.includes("Fourth prompt"), sent);
      assert.ok(!sent.includes("Second prompt") && !sent.includes("Third prompt"), sent);
      assert.equal(await chat.locator(".msg.user", { hasText: "Second prompt" }).count(), 0);
    });
  });

  test("the status bar follows a mode cycle", { timeout: 60_000 }, async () => {
    await step("mode-cycle", async (page) => {
      assert.match(await status(page), /ask before edits · /);
      await statusItem(page).click();
      await statusShows(page, "accept edits", 10_000);
      await screenshot(page, "mode-accept-edits");
      await statusItem(page).click();
      await waitFor("plan mode", async () => ((await status(page)).startsWith("plan") || (await status(page)).includes(" plan ·") ? true : undefined), 10_000);
      // The chat hears of the mode after the status bar (another message, to the webview): wait
      // for it to follow (read at once, it failed a run under load with 'acceptEdits').
      await chatFrame(page).locator('#mode[data-mode="plan"]').waitFor({ timeout: 10_000 });
      assert.equal(await chatFrame(page).locator("#mode").getAttribute("data-mode"), "plan");
    });
  });

  test("a plan approved in the inline card gets implemented", { timeout: 120_000 }, async () => {
    await session.fake.load([
      {
        content: [
          { type: "text", text: "Here is my plan." },
          { type: "tool_use", id: "toolu_plan", name: "exit_plan_mode", input: { plan: "1. Create `planned.txt` containing **hello plan**\n2. Report back" } },
        ],
      },
      { content: [{ type: "tool_use", id: "toolu_write", name: "write_file", input: { path: "planned.txt", content: "hello plan\n" } }] },
      { content: [{ type: "text", text: "Created planned.txt." }] },
    ]);
    await step("plan-approved", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Create planned.txt");
      const card = chat.locator('.card.plan[data-state="pending"]');
      await card.waitFor({ timeout: 30_000 });
      assert.match(await card.innerText(), /Create planned\.txt containing hello plan/);
      await screenshot(page, "plan-card");
      await card.locator('input[value="acceptEdits"]').check();
      await answerCard(card, "button.approve");
      await chat.locator('.card.plan[data-state="approved"]', { hasText: "Approved" }).waitFor();
      const file = path.join(session.workspace, "planned.txt");
      await waitFor("planned.txt on disk", () => (existsSync(file) ? true : undefined), 30_000);
      assert.equal(readFileSync(file, "utf8"), "hello plan\n");
      await waitIdle(page);
      assert.match(await status(page), /accept edits/);
    });
  });

  test("an edit denied in the diff flow leaves the file unchanged", { timeout: 120_000 }, async () => {
    const target = path.join(session.workspace, "notes.txt");
    writeFileSync(target, "original\n");
    await session.fake.load([
      { content: [{ type: "tool_use", id: "toolu_read", name: "read_file", input: { path: "notes.txt" } }] },
      { content: [{ type: "tool_use", id: "toolu_edit", name: "edit_file", input: { path: "notes.txt", old_string: "original", new_string: "changed by the agent" } }] },
      { content: [{ type: "text", text: "Understood, I left notes.txt alone." }] },
    ]);
    await step("edit-denied", async (page) => {
      const chat = chatFrame(page);
      // Back to "ask before edits": shift+tab in the chat cycles acceptEdits → plan → default.
      await chat.locator("#input").click();
      await chat.locator("#input").press("Shift+Tab");
      await chat.locator('#mode[data-mode="plan"]').waitFor({ timeout: 10_000 });
      await chat.locator("#input").press("Shift+Tab");
      await statusShows(page, "ask before edits", 10_000);

      await send(page, "Change notes.txt");
      const card = chat.locator('.card.confirm.diff[data-state="pending"]');
      await card.waitFor({ timeout: 30_000 });
      const diffTab = page.locator(".tabs-container .tab", { hasText: "notes.txt (proposed edit" });
      await diffTab.waitFor({ timeout: 15_000 });
      const diff = page.locator(".monaco-diff-editor").first();
      await diff.locator(".editor.modified .view-lines", { hasText: "changed by the agent" }).waitFor({ timeout: 15_000 });
      await diff.locator(".editor.original .view-lines", { hasText: "original" }).waitFor();
      await screenshot(page, "edit-diff-open");
      // Closing the diff is not an approval: the card stays pending and the file unchanged.
      await diffTab.hover();
      await diffTab.locator(".codicon-close, .codicon-close-dirty, [aria-label^='Close']").first().click();
      await diffTab.waitFor({ state: "detached" });
      // A later answer from the server: a prompt typed now is queued (typing never answers a
      // question). The chat shows the queue after anything the close could have done to the card.
      await send(page, "Is the card still waiting?");
      await chat.locator("#queue .queue-title", { hasText: "Queued (1)" }).waitFor({ timeout: 10_000 });
      assert.equal(await chat.locator('.card.confirm[data-state="pending"]').count(), 1);
      assert.equal(readFileSync(target, "utf8"), "original\n");
      await chat.locator("#queue button.clear-queue").click();
      await chat.locator("#queue").waitFor({ state: "hidden", timeout: 10_000 });

      await card.locator("textarea.feedback").fill("Keep the original text");
      await card.locator("button.deny").click();
      await chat.locator('.card.confirm[data-state="deny"]', { hasText: "Denied: Keep the original text" }).waitFor();
      await chat.locator(".tool.denied", { hasText: "edit_file" }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
      assert.equal(readFileSync(target, "utf8"), "original\n");
    });
  });

  test("Escape in the chat interrupts a running command", { timeout: 120_000 }, async () => {
    // Only the interrupt can end this turn: the command would outlast the test.
    await session.fake.load([
      { content: [{ type: "tool_use", id: "toolu_sleep", name: "bash", input: { command: "sleep 600 && touch slept.txt" } }] },
      { content: [{ type: "text", text: "This answer should never be needed." }] },
    ]);
    await step("escape-interrupts", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Wait a while");
      // `touch` makes the command a write, so the server asks first (command preview).
      const card = chat.locator('.card.confirm.command[data-state="pending"]');
      const running = chat.locator(".tool.running", { hasText: "sleep 600" });
      await card.waitFor({ timeout: 30_000 });
      assert.match(await card.locator("pre.command").innerText(), /\$ sleep 600 && touch slept\.txt/);
      await screenshot(page, "command-confirm");
      await answerCard(card, "button.allow");
      await running.locator(".duration.elapsed").waitFor({ timeout: 30_000 });
      await waitFor("the command's process", () => (session.processPids("sleep 600").length > 0 ? true : undefined), 30_000);
      await screenshot(page, "command-running");
      await chat.locator("#input").click();
      await chat.locator("#input").press("Escape");
      await chat.locator(".turn-end.interrupted").last().waitFor({ timeout: 30_000 });
      await chat.locator(".tool.interrupted", { hasText: "sleep 600" }).waitFor({ timeout: 10_000 });
      await waitIdle(page);
      // Killed, not left running: its process is gone.
      await waitFor("the command's process to end", () => (session.processPids("sleep 600").length === 0 ? true : undefined), 30_000);
    });
  });

  test("an interrupt while a question is pending dismisses its card", { timeout: 120_000 }, async () => {
    await session.fake.load([{ content: [{ type: "tool_use", id: "toolu_touch", name: "bash", input: { command: "touch never.txt" } }] }]);
    await step("pending-card-dismissed", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Touch a file");
      await chat.locator('.card.confirm.command[data-state="pending"]').waitFor({ timeout: 30_000 });
      await chat.locator("#input").press("Escape");
      await chat.locator('.card.confirm[data-state="cancelled"]', { hasText: "Dismissed" }).waitFor({ timeout: 15_000 });
      await chat.locator(".turn-end.interrupted").last().waitFor();
      await waitIdle(page);
      assert.ok(!existsSync(path.join(session.workspace, "never.txt")));
    });
  });

  test("the todo tree shows the board", { timeout: 120_000 }, async () => {
    const todos = [
      { content: "Write the tests", status: "completed", activeForm: "Writing the tests" },
      { content: "Run the tests", status: "in_progress", activeForm: "Running the tests" },
      { content: "Ship it", status: "pending", activeForm: "Shipping it" },
    ];
    await session.fake.load([
      { content: [{ type: "tool_use", id: "toolu_todo", name: "todo_write", input: { todos } }] },
      { content: [{ type: "text", text: "Board updated." }] },
    ]);
    await step("todo-board", async (page) => {
      await send(page, "Plan the work on the board");
      await waitIdle(page);
      await runCommand(page, "Tiller: Show Todo Board");
      // The turn is over: the item it left in progress is shown as such, without a spinner, and
      // the status bar has the counts only (no turn works on it now).
      for (const label of ["Write the tests, done", "Run the tests, in progress when the turn stopped", "Ship it, pending"]) {
        await page.getByRole("treeitem", { name: label }).waitFor({ timeout: 20_000 });
      }
      await statusShows(page, "(1/3)", 15_000);
      assert.ok(!(await status(page)).includes("Running the tests"), "nothing is in progress while idle");
    });
  });

  test("a failed turn shows its error kind and a hint", { timeout: 120_000 }, async () => {
    await session.fake.load([{ content: [], error: { status: 401, type: "authentication_error", message: "invalid x-api-key" } }]);
    await step("auth-error", async (page) => {
      const chat = chatFrame(page);
      await send(page, "Hello again");
      const failure = chat.locator('.turn-end.failed[data-kind="auth"]');
      await failure.waitFor({ timeout: 60_000 });
      assert.match(await failure.innerText(), /Failed \(auth\)/);
      await failure.locator("button.hint-action", { hasText: "Set API Key…" }).waitFor();
    });
  });

  test("the model is switched from a quick pick of the API's models", { timeout: 60_000 }, async () => {
    // In a chat of its own, then back to the chat of the tests before (the first test's, with
    // the model it had): a new chat takes the current one's model, and the modules that follow
    // script tool calls without the thinking blocks that Haiku 4.5's budget thinking requires
    // (the fake answers 400, as the API does).
    const previous = await chatFrame(session.page).locator("body").getAttribute("data-session");
    assert.ok(previous);
    await startNewChat(session.page);
    await step("model-switched", async (page) => {
      await runCommand(page, "Tiller: Switch Model…");
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "claude-haiku-4-5" });
      await row.first().waitFor({ timeout: 20_000 });
      await screenshot(page, "model-pick");
      await row.first().click();
      await statusShows(page, "claude-haiku-4-5", 10_000);
    });
    await send(session.page, `/resume ${previous}`);
    await chatState(session.page, "session", previous, 20_000);
  });

  test("Set API Key… restarts the server with the key in its environment only", { timeout: 120_000 }, async () => {
    const key = "sk-ant-e2e-secret-0123456789";
    await step("api-key", async (page) => {
      const [before] = session.serverPids();
      await runCommand(page, "Tiller: Set API Key…");
      const input = page.locator(".quick-input-widget input");
      await page.locator('.quick-input-widget input[type="password"]').waitFor({ timeout: 10_000 });
      await input.fill(key);
      await input.press("Enter");
      const pid = await waitFor("a restarted server", () => {
        const pids = session.serverPids();
        return pids.length === 1 && pids[0] !== before ? pids[0] : undefined;
      }, 60_000);
      await waitFor("the server environment", () => (readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`ANTHROPIC_API_KEY=${key}`) ? true : undefined), 10_000);
      // Launched as `python -P -m tiller --warm` and nothing more: an extra argument (the
      // `--stdio` vscode-languageclient adds for TransportKind.stdio) made the warm template
      // refuse it; `-P` keeps the workspace off the server's sys.path.
      assert.deepEqual(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(1, -1), ["-P", "-m", "tiller", "--warm"]);
      await chatState(page, "connection", "running", 60_000);
      assert.equal(grepTree(session.userData, key), undefined);
    });
  });

  test("after a crash the server restarts and resumes the session", { timeout: 180_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "Back after the restart." }] }]);
    await step("crash-restart", async (page) => {
      const chat = chatFrame(page);
      const sessionId = await chat.locator("body").getAttribute("data-session");
      assert.ok(sessionId);
      const [pid, ...others] = session.serverPids();
      assert.ok(pid !== undefined && others.length === 0, `expected one server, got ${String(pid)} ${others.join(" ")}`);
      const [serving, ...alsoServing] = session.servingPids();
      assert.ok(serving !== undefined && alsoServing.length === 0, `expected one serving process, got ${String(serving)} ${alsoServing.join(" ")}`);
      process.kill(serving, "SIGKILL");
      await waitFor("a new server", () => {
        const pids = session.serverPids();
        return pids.length === 1 && pids[0] !== pid ? true : undefined;
      }, 60_000);
      await chatState(page, "connection", "running", 60_000);
      // The same session, redrawn from the server's transcript.
      await chat.locator(".msg.user", { hasText: "Say hello" }).waitFor({ timeout: 30_000 });
      assert.equal(await chat.locator("body").getAttribute("data-session"), sessionId);
      await send(page, "Are you back?");
      await chat.locator(".msg.assistant", { hasText: "Back after the restart." }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
    });
  });

  test("a new session starts empty and the old one can be resumed", { timeout: 120_000 }, async () => {
    await step("sessions", async (page) => {
      const chat = chatFrame(page);
      const previous = await chat.locator("body").getAttribute("data-session");
      assert.ok(previous);
      await runCommand(page, "Tiller: New Chat");
      await waitFor("a new session", async () => {
        const current = await chat.locator("body").getAttribute("data-session");
        return current !== previous && current !== "" ? true : undefined;
      }, 20_000);
      assert.equal(await chat.locator(".msg.user").count(), 0);
      await runCommand(page, "Tiller: Resume Session…");
      const rows = page.locator(".quick-input-list .monaco-list-row");
      await rows.first().waitFor({ timeout: 20_000 });
      await screenshot(page, "session-pick");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Say hello" }).first().click();
      await chatState(page, "session", previous, 20_000);
      await chat.locator(".msg.user", { hasText: "Say hello" }).waitFor({ timeout: 20_000 });
    });
  });
}
