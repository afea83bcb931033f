// Issue 13 end to end in code-server: a chat that tells the truth and reads well. Redraw equals
// live, crash-cut turns marked, live tool output, rich and safe rendering, edits as diffs,
// confirmation where the tool row is, plain mode words, settings that do not break, sessions,
// the welcome view. Run in the shared session of plain-workspace.test.ts, in order, last: its
// window reload and its offline demo (which stays on) come at its end.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import type { FrameLocator, Page } from "playwright-core";
import { answerCard, chatFrame, chatState, inNewSharedChat, runCommand, screenshots, send, setMode, statusItem, statusShows, steps, text, tool, waitFor, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("chat");

const step = steps(() => session, screenshot);

/** What the chat shows, item by item: classes, card states and text (no ids, no timers). */
async function chatSnapshot(chat: FrameLocator): Promise<string[]> {
  return chat.locator("#log").evaluate((log) =>
    Array.from(log.children)
      .filter((element) => !element.classList.contains("local") && !element.classList.contains("welcome"))
      .map((element) => {
        const classes = Array.from(element.classList).filter((name) => name !== "streaming").sort().join(".");
        const states = Array.from(element.querySelectorAll("[data-state]"))
          .map((card) => card.getAttribute("data-state"))
          .join(",");
        const own = element.getAttribute("data-state") ?? "";
        return `${classes}|${own}|${states}|${(element as HTMLElement).innerText.trim()}`;
      }),
  );
}

/** Opens the Settings editor on one setting and returns its input box. */
async function settingInput(page: Page, key: string, title: string): Promise<ReturnType<Page["locator"]>> {
  await runCommand(page, "Preferences: Open User Settings");
  const search = page.locator(".settings-editor .suggest-input-container").first();
  await search.waitFor({ timeout: 20_000 });
  await search.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(key, { delay: 30 });
  const item = page.locator(".settings-editor .setting-item-contents", { hasText: title }).first();
  await item.waitFor({ timeout: 20_000 });
  return item.locator("input").first();
}

export function chatTests(): void {
  inNewSharedChat((shared) => (session = shared));

  test("a new chat opens on a welcome view with the mode, the model and example prompts", { timeout: 60_000 }, async () => {
    await step("welcome", async (_page, chat) => {
      const welcome = chat.locator(".welcome");
      await welcome.waitFor({ timeout: 20_000 });
      const shown = await welcome.innerText();
      assert.match(shown, /coding agent/);
      assert.match(shown, /Mode: ask before edits/);
      assert.match(shown, /Model: /);
      assert.match(shown, /Talks to the Anthropic API/);
      assert.equal(await welcome.locator("button.example").count(), 3);
    });
  });

  test("markdown renders rich and safe: highlighting, copy, collapse, tables, wrapping; no remote image loads", { timeout: 120_000 }, async () => {
    const hits: string[] = [];
    const listener = http.createServer((request, response) => {
      hits.push(request.url ?? "");
      response.end("x");
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const port = (listener.address() as AddressInfo).port;
    const long = Array.from({ length: 60 }, (_, i) => `    value_${i} = compute(${i})`).join("\n");
    const answer = [
      "Here is **code**:",
      "",
      "```python\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n```",
      "",
      `\`\`\`python\ndef long():\n${long}\n\`\`\``,
      "",
      "| Mode | Edits |\n|---|---|\n| plan | refused |\n| accept edits | allowed |",
      "",
      "1. first\n2. second",
      "",
      `A long line: ${"x".repeat(3000)} and inline \`${"y".repeat(400)}\`.`,
      "",
      `![status badge](http://127.0.0.1:${port}/badge.svg?token=secret)`,
    ].join("\n");
    await session.fake.load([{ content: [text(answer)] }]);
    try {
      await step("rich-markdown", async (page, chat) => {
        await send(page, "Show me some markdown");
        const reply = chat.locator(".msg.assistant").last();
        await reply.locator("a.image-link").waitFor({ timeout: 30_000 });
        await waitIdle(page);
        assert.ok((await reply.locator(".hljs-keyword").count()) > 0, "python is highlighted");
        assert.equal(await reply.locator(".code-block button.code-copy").count(), 2);
        assert.equal(await reply.locator(".code-block.collapsed").count(), 1, "the 62-line block starts collapsed");
        await reply.locator(".code-block.collapsed button.expand", { hasText: "Show all" }).waitFor();
        const border = await reply.locator("td").first().evaluate((cell) => getComputedStyle(cell).borderTopWidth);
        assert.notEqual(border, "0px");
        assert.equal(await reply.locator("ol > li").count(), 2);
        const overflow = await chat.locator("#log").evaluate((log) => log.scrollWidth - log.clientWidth);
        assert.ok(overflow <= 1, `the chat scrolls sideways by ${overflow}px`);
        // The reply is drawn and the turn over: the image is a link, and nothing in the chat
        // can load it (no <img> anywhere; the CSP allows none from the network either).
        assert.equal(await chat.locator("#log img").count(), 0);
        assert.match((await reply.locator("a.image-link").getAttribute("href")) ?? "", /badge\.svg\?token=secret/);
        assert.deepEqual(hits, [], "a remote image request reached the listener");
        await reply.locator(".code-block").first().scrollIntoViewIfNeeded();
      });
    } finally {
      listener.close();
    }
  });

  test("a command asks on its row before any output, streams its output live with a timer", { timeout: 120_000 }, async () => {
    const command = "for i in 1 2 3 4 5 6; do echo line$i; sleep 1; done > /dev/stderr; touch counted.txt";
    await session.fake.load([{ content: [tool("toolu_live", "bash", { command })] }, { content: [text("Counted.")] }]);
    await step("live-output", async (page, chat) => {
      await send(page, "Count slowly");
      const row = chat.locator('.tool[data-tool-use-id="toolu_live"]');
      const card = row.locator('.card.confirm.command[data-state="pending"]');
      await card.waitFor({ timeout: 30_000 });
      assert.equal(await row.locator(".output").count(), 0, "no output before the answer");
      assert.match(await row.locator(".duration").innerText(), /waiting for you/);
      await screenshot(page, "confirm-on-row");
      await answerCard(card, "button.allow");
      await row.locator(".output", { hasText: "line1" }).waitFor({ timeout: 20_000 });
      assert.equal(await row.getAttribute("class"), "tool running open", "output arrived while the command runs");
      const first = await row.locator(".duration.elapsed").innerText();
      await waitFor("the elapsed timer to tick", async () => ((await row.locator(".duration.elapsed").innerText()) !== first ? true : undefined), 10_000);
      await screenshot(page, "live-output-running");
      await chat.locator('.tool.ok[data-tool-use-id="toolu_live"]').waitFor({ timeout: 30_000 });
      await waitIdle(page);
    });
  });

  test("an interrupted command keeps its partial output and its real duration", { timeout: 120_000 }, async () => {
    // It prints "a second in" after `sleep 1`: once that shows, it has run for at least a second.
    const command = "echo started-work; sleep 1; echo a second in; sleep 600; touch never.txt";
    await session.fake.load([{ content: [tool("toolu_cut", "bash", { command })] }]);
    await step("interrupted-partial", async (page, chat) => {
      await send(page, "Work for a while");
      const row = chat.locator('.tool[data-tool-use-id="toolu_cut"]');
      await answerCard(row.locator('.card.confirm[data-state="pending"]'), "button.allow");
      await row.locator(".output", { hasText: "a second in" }).waitFor({ timeout: 20_000 });
      await chat.locator("#input").press("Escape");
      await chat.locator('.tool.interrupted[data-tool-use-id="toolu_cut"]').waitFor({ timeout: 15_000 });
      await waitIdle(page);
      // The real duration (it ran for a second before the interrupt), not 0.
      const duration = await row.locator(".duration").innerText();
      assert.ok(Number.parseFloat(duration) >= 1, `duration ${duration}`);
      await row.locator(".tool-head").click();
      await row.locator(".output", { hasText: "started-work" }).waitFor({ timeout: 5_000 });
    });
  });

  test("edits read +added −removed and open their diff on click", { timeout: 120_000 }, async () => {
    writeFileSync(`${session.workspace}/story.txt`, "one\ntwo\nthree\n");
    await session.fake.load([
      { content: [tool("toolu_r", "read_file", { path: "story.txt" })] },
      { content: [tool("toolu_e", "edit_file", { path: "story.txt", old_string: "two", new_string: "TWO\nand a half" })] },
      { content: [text("Edited.")] },
    ]);
    await step("edit-diffstat", async (page, chat) => {
      await setMode(page, "accept edits");
      await send(page, "Edit the story");
      const row = chat.locator('.tool.ok[data-tool-use-id="toolu_e"]');
      await row.waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const stat = row.locator("button.diffstat");
      assert.equal((await stat.innerText()).trim(), "+2 −1");
      await stat.click();
      const diff = page.locator(".monaco-diff-editor").first();
      await diff.locator(".editor.modified .view-lines", { hasText: "and a half" }).waitFor({ timeout: 15_000 });
      await setMode(page, "ask before edits");
    });
  });

  test("plan mode is coloured and modes read as plain words", { timeout: 60_000 }, async () => {
    await step("plan-mode-colour", async (page, chat) => {
      await setMode(page, "plan");
      const background = await statusItem(page).evaluate((item) => getComputedStyle(item).backgroundColor);
      assert.notEqual(background, "rgba(0, 0, 0, 0)");
      const badge = await chat.locator("#mode").evaluate((mode) => getComputedStyle(mode).backgroundColor);
      assert.notEqual(badge, "rgba(0, 0, 0, 0)");
      await runCommand(page, "Tiller: Set Mode…");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "accept edits" }).first().waitFor();
      const rows = await page.locator(".quick-input-list .monaco-list-row").allInnerTexts();
      assert.ok(!rows.join("\n").includes("acceptEdits"), rows.join("\n"));
      await page.keyboard.press("Escape");
      await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
      await setMode(page, "ask before edits");
    });
  });

  test("a chat redrawn after a restart equals the live one", { timeout: 240_000 }, async () => {
    writeFileSync(`${session.workspace}/plan.txt`, "draft\n");
    await session.fake.load([
      { content: [text("Let me look first."), tool("toolu_p1", "read_file", { path: "plan.txt" })] },
      { content: [text("My plan."), tool("toolu_x1", "exit_plan_mode", { plan: "1. Rewrite `plan.txt`\n2. Report" })] },
      { content: [tool("toolu_x2", "exit_plan_mode", { plan: "1. Rewrite only the first line of `plan.txt`" })] },
      { content: [tool("toolu_w", "write_file", { path: "plan.txt", content: "final\n" })] },
      { content: [tool("toolu_rm", "bash", { command: "rm plan.txt" })] },
      { content: [text("Rewrote plan.txt; you kept it from being removed.")] },
    ]);
    await step("redraw-live", async (page, chat) => {
      await runCommand(page, "Tiller: New Chat");
      await chat.locator(".welcome").waitFor({ timeout: 20_000 });
      await setMode(page, "plan");
      await send(page, "Rework plan.txt");
      const first = chat.locator('.card.plan[data-state="pending"]');
      await first.waitFor({ timeout: 30_000 });
      await first.locator("textarea.feedback").fill("smaller, please");
      await chat.locator('.card.plan[data-state="pending"] button.reject').click();
      await chat.locator('.card.plan[data-state="rejected"]').waitFor();
      const second = chat.locator('.card.plan[data-state="pending"]');
      await second.waitFor({ timeout: 30_000 });
      await second.locator('input[value="default"]').check();
      await second.locator("button.approve").click();
      const write = chat.locator('.tool[data-tool-use-id="toolu_w"] .card.confirm[data-state="pending"]');
      await answerCard(write, "button.allow");
      const rm = chat.locator('.tool[data-tool-use-id="toolu_rm"] .card.confirm[data-state="pending"]');
      await rm.waitFor({ timeout: 30_000 });
      await rm.locator("textarea.feedback").fill("keep it");
      await answerCard(rm, "button.deny");
      // The turn's last item is drawn: nothing more comes for it.
      await chat.locator('.msg.assistant:has-text("you kept it") ~ .turn-end.completed').waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const live = await chatSnapshot(chat);
      await screenshot(page, "redraw-before-restart");
      assert.ok(live.some((line) => line.includes("Rewrite `plan.txt`") || line.includes("Rewrite plan.txt")), live.join("\n"));

      const sessionId = await chat.locator("body").getAttribute("data-session");
      // The redraw builds every item anew from the server's transcript: the live prompt's element
      // leaves the page when it happens.
      const livePrompt = await chat.locator(".msg.user", { hasText: "Rework plan.txt" }).elementHandle();
      assert.ok(livePrompt !== null);
      await runCommand(page, "Tiller: Restart Server");
      await chat.locator(".notice.local", { hasText: "Restarting" }).waitFor({ timeout: 30_000 });
      await waitFor("the redraw", async () => ((await livePrompt.evaluate((element) => element.isConnected)) ? undefined : true), 60_000);
      await chatState(page, "connection", "running", 60_000);
      assert.equal(await chat.locator("body").getAttribute("data-session"), sessionId);
      const redrawn = await chatSnapshot(chat);
      assert.deepEqual(redrawn, live);
      await setMode(page, "ask before edits");
    });
  });

  test("a turn cut by a server crash is marked, and the restart notice stays", { timeout: 180_000 }, async () => {
    await session.fake.load([{ content: [tool("toolu_crash", "bash", { command: "sleep 40" })] }, { content: [text("never")] }]);
    await step("crash-marker", async (page, chat) => {
      await send(page, "Sleep a long time");
      const row = chat.locator('.tool[data-tool-use-id="toolu_crash"]');
      await row.waitFor({ timeout: 30_000 });
      const allow = row.locator('.card.confirm[data-state="pending"] button.allow');
      if ((await allow.count()) > 0) await allow.click();
      await chat.locator('.tool.running[data-tool-use-id="toolu_crash"]').waitFor({ timeout: 30_000 });
      const [pid] = session.servingPids();
      assert.ok(pid !== undefined);
      process.kill(pid, "SIGKILL");
      await chat.locator('.turn-end.interrupted[data-cause="server_stopped"]').waitFor({ timeout: 90_000 });
      assert.match(await chat.locator('.turn-end[data-cause="server_stopped"]').innerText(), /server stopped/);
      await chat.locator(".notice", { hasText: "stopped; restarting" }).waitFor({ timeout: 10_000 });
      await chat.locator('.tool.interrupted[data-tool-use-id="toolu_crash"]').waitFor({ timeout: 10_000 });
    });
  });

  test("a setting changed in the Settings editor restarts the server once, with the new value and launch.sh's Python; a bad base URL says so", { timeout: 240_000 }, async () => {
    const running = (): Promise<void> => chatState(session.page, "connection", "running", 60_000);
    const readTwice = [
      { content: [tool("toolu_b1", "read_file", { path: "README.md" })] },
      { content: [tool("toolu_b2", "read_file", { path: "README.md" })] },
      { content: [text("Read it twice.")] },
    ];
    await step("settings-restart", async (page, chat) => {
      await running();
      const [before] = session.serverPids();
      const seen = new Set<number>();
      const watch = setInterval(() => session.serverPids().forEach((pid) => seen.add(pid)), 100);
      const budget = await settingInput(page, "tiller.toolBudget", "Tool Budget");
      try {
        // One change, whatever the typing speed (how a burst of changes makes one restart is
        // unit-tested with a controlled clock: test/unit/restarts.test.ts).
        await budget.fill("1");
        await waitFor("a restarted server", () => {
          const pids = session.serverPids();
          return pids.length === 1 && pids[0] !== before ? true : undefined;
        }, 60_000);
        await running();
        // The restarted server has the new value (it asks to go on after one tool call): the
        // change was seen before it started, so nothing is left to cause another restart.
        await session.fake.load(readTwice);
        await send(page, "Read the README twice");
        const checkpoint = chat.locator('.card.checkpoint[data-state="pending"]', { hasText: "1 tool calls so far" });
        await checkpoint.waitFor({ timeout: 30_000 });
        await screenshot(page, "settings-checkpoint");
        await checkpoint.locator("button.secondary", { hasText: "Stop" }).click();
        await chat.locator(".turn-end.stopped").last().waitFor({ timeout: 30_000 });
        await waitIdle(page);
      } finally {
        clearInterval(watch);
      }
      seen.delete(before ?? -1);
      // One change, one new server. (The old one may still be exiting while the new one
      // starts: counting both at one instant raced with process exit and failed in CI.)
      assert.equal(seen.size, 1, `servers started: ${[...seen].join(", ")}`);
      const [pid] = [...seen];
      assert.match(readFileSync(`/proc/${pid}/cmdline`, "utf8"), /\.venv\/bin\/python/);
      // No checkpoints for the tests that follow.
      await budget.fill("0");
      await waitFor("the server restarted without a budget", () => {
        const pids = session.serverPids();
        return pids.length === 1 && pids[0] !== pid ? true : undefined;
      }, 60_000);
      await running();

      // Typed key by key in the Settings editor: every prefix of this is malformed.
      const baseUrl = await settingInput(page, "tiller.baseUrl", "Base Url");
      await baseUrl.click();
      await page.keyboard.press("Control+A");
      await page.keyboard.type("htp//not a url");
      await chat.locator(".notice.error", { hasText: "'tiller.baseUrl' is not a valid http(s) URL: 'htp//not a url'" }).waitFor({ timeout: 30_000 });
      await screenshot(page, "bad-base-url");
      // The good URL in one change: no prefix of it (a valid URL with another port) starts a server.
      await baseUrl.fill(session.fake.baseUrl);
      await running();
      await page.keyboard.press("Control+W");
    });
  });

  test("sessions: title-bar New chat and History, this folder's chats with turns and age, /resume ID loads the chat", { timeout: 180_000 }, async () => {
    await step("sessions", async (page, chat) => {
      const previous = await chat.locator("body").getAttribute("data-session");
      assert.ok(previous);
      const header = page.locator(".pane-header", { hasText: "Chat" }).first();
      await header.hover();
      await page.locator('.pane-header .action-label[aria-label="New Chat"]').first().click();
      await waitFor("a new chat", async () => {
        const now = await chat.locator("body").getAttribute("data-session");
        return now !== previous && now !== "" ? true : undefined;
      }, 20_000);
      await chat.locator(".welcome").waitFor({ timeout: 10_000 });
      await header.hover();
      await page.locator('.pane-header .action-label[aria-label="Chat History…"]').first().click();
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "turn" }).first().waitFor({ timeout: 20_000 });
      const rows = (await page.locator(".quick-input-list .monaco-list-row").allInnerTexts()).join("\n");
      assert.match(rows, /\d+ turns?/);
      assert.match(rows, /ago|just now/);
      assert.match(rows, /workspace/);
      await screenshot(page, "history");
      await page.keyboard.press("Escape");
      await send(page, `/resume ${previous}`);
      await chatState(page, "session", previous, 20_000);
      await chat.locator(".msg.user", { hasText: "Rework plan.txt" }).waitFor({ timeout: 20_000 });
      await chat.locator(".card.plan").first().waitFor();
    });
  });

  test("rewind to here lists what changes first, rewinds files and conversation, and can be undone", { timeout: 120_000 }, async () => {
    await session.fake.load([{ content: [tool("toolu_rw", "write_file", { path: "rewind-me.txt", content: "by the agent\n" })] }, { content: [text("Wrote it.")] }]);
    await step("rewind", async (page, chat) => {
      await runCommand(page, "Tiller: New Chat");
      await chat.locator(".welcome").waitFor({ timeout: 20_000 });
      await setMode(page, "accept edits");
      await send(page, "Write rewind-me.txt");
      await chat.locator(".msg.assistant", { hasText: "Wrote it." }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const file = `${session.workspace}/rewind-me.txt`;
      assert.equal(readFileSync(file, "utf8"), "by the agent\n");
      const prompt = chat.locator(".msg.user", { hasText: "Write rewind-me.txt" });
      await prompt.hover();
      await prompt.locator("button.rewind").click();
      const dialog = page.locator(".monaco-dialog-box");
      await dialog.waitFor({ timeout: 20_000 });
      assert.match(await dialog.innerText(), /rewind-me\.txt/);
      await screenshot(page, "rewind-dry-run");
      await dialog.locator(".monaco-button", { hasText: "Rewind Files and Conversation" }).click();
      const undo = chat.locator(".notice button.undo-rewind");
      await undo.waitFor({ timeout: 20_000 });
      await waitFor("the file rewound", () => (existsSync(file) ? undefined : true), 10_000);
      await screenshot(page, "rewound");
      await undo.click();
      await waitFor("the file back", () => (existsSync(file) ? true : undefined), 10_000);
      await chat.locator(".notice", { hasText: "Rewind undone" }).waitFor({ timeout: 10_000 });
      // The chat's checkpoints, one per prompt, from the palette (also in the chat's "…" menu).
      await runCommand(page, "Tiller: Rewind to Before a Prompt…");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Write rewind-me.txt" }).first().waitFor({ timeout: 20_000 });
      await screenshot(page, "checkpoints");
      await page.keyboard.press("Escape");
      await setMode(page, "ask before edits");
    });
  });

  test("a window reload comes back to the same chat", { timeout: 240_000 }, async () => {
    await session.fake.load([{ content: [text("Remembered across the reload.")] }]);
    await step("reload-resumes", async (page, chat) => {
      await runCommand(page, "Tiller: New Chat");
      await chat.locator(".welcome").waitFor({ timeout: 20_000 });
      await send(page, "Remember this chat");
      await chat.locator(".msg.assistant", { hasText: "Remembered across the reload." }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const sessionId = await chat.locator("body").getAttribute("data-session");
      assert.ok(sessionId !== null && sessionId !== "");
      // The reload navigates the page: wait for that, not for a status bar the old page still shows.
      const reloading = page.waitForEvent("framenavigated", { predicate: (frame) => frame === page.mainFrame(), timeout: 60_000 });
      await runCommand(page, "Developer: Reload Window");
      await reloading;
      await statusItem(page).waitFor({ timeout: 90_000 });
      await statusShows(page, "·", 90_000);
      await runCommand(page, "Tiller: Open Chat");
      const reloaded = chatFrame(page);
      await reloaded.locator(".msg.user", { hasText: "Remember this chat" }).waitFor({ timeout: 60_000 });
      await reloaded.locator(".msg.assistant", { hasText: "Remembered across the reload." }).waitFor({ timeout: 30_000 });
      assert.equal(await reloaded.locator("body").getAttribute("data-session"), sessionId);
    });
  });

  test("the offline demo answers prompt after prompt, and its closing words follow what was denied", { timeout: 240_000 }, async () => {
    await step("demo", async (page, chat) => {
      const demo = await settingInput(page, "tiller.demoScript", "Demo Script");
      await demo.fill("demo");
      await page.keyboard.press("Control+W");
      await chat.locator("#mode", { hasText: /offline demo/ }).waitFor({ timeout: 60_000 });
      await runCommand(page, "Tiller: New Chat");
      await chat.locator(".welcome", { hasText: "Offline demo" }).waitFor({ timeout: 20_000 });
      await screenshot(page, "demo-welcome");

      /** Answers every question (edits of hello.py denied, the rest allowed) until the chat
       *  shows `ends` ended turns and is idle. */
      const answerUntil = async (ends: number): Promise<void> => {
        await waitFor(`turn ${ends} to end`, async () => {
          const pending = chat.locator('.card.confirm[data-state="pending"]').first();
          if ((await pending.count()) > 0) {
            const row = chat.locator(".tool", { has: chat.locator('.card.confirm[data-state="pending"]') }).first();
            const name = (await row.locator(".tool-name").innerText().catch(() => "")).trim();
            await pending.locator(name === "edit_file" ? "button.deny" : "button.allow").click({ timeout: 5_000 }).catch(() => undefined);
            return undefined;
          }
          if ((await chat.locator('.card.plan[data-state="pending"]').count()) > 0) {
            await chat.locator('.card.plan[data-state="pending"] button.approve').click({ timeout: 5_000 }).catch(() => undefined);
            return undefined;
          }
          const idle = (await chat.locator("body").getAttribute("data-busy")) === "false";
          return idle && (await chat.locator(".turn-end").count()) >= ends ? true : undefined;
        }, 90_000);
      };

      await chat.locator(".welcome button.example").first().click();
      await answerUntil(1);
      const first = chat.locator(".msg.assistant").last();
      await waitFor("the closing words", async () => ((await first.innerText()).includes("Done.") ? true : undefined), 30_000);
      assert.match(await first.innerText(), /denied the edit/);
      assert.doesNotMatch(await first.innerText(), /changed its greeting/);
      await screenshot(page, "demo-first-prompt");

      const ends = await chat.locator(".turn-end").count();
      await send(page, "And now?");
      await answerUntil(ends + 1);
      const second = (await chat.locator("#log").innerText());
      assert.doesNotMatch(second, /end of script/);
      await chat.locator('.card.plan[data-state="approved"]').waitFor({ timeout: 10_000 });
      await chat.locator(".msg.assistant", { hasText: "as planned" }).waitFor({ timeout: 30_000 });
    });
  });
}
