// Issue 36 in code-server: what a newcomer on a fresh profile met in the extension. The chat has
// the side bar to itself (the other views start collapsed) and opens in an editor tab too (back
// after a reload); a long plan's Approve stays in view; an empty Permissions view says where rules come from; web
// search is turned on from VS Code's settings; the status bar says when the offline demo plays.
// A code-server session of its own (a fresh profile is what the first test looks at); each test
// starts from a new chat in "ask before edits" and puts back the settings it changed.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import {
  answerCard,
  chatFrame,
  chatState,
  editorChatFrame,
  editorChatIframe,
  runCommand,
  screenshots,
  send,
  setMode,
  startChatSession,
  startNewChat,
  statusItem,
  statusShows,
  steps,
  text,
  waitFor,
  waitIdle,
  type Session,
} from "./harness";

let session: Session;
const screenshot = screenshots("newcomer");
const step = steps(() => session, screenshot);

before(async () => {
  session = await startChatSession();
}, { timeout: 300_000 });

after(async () => {
  await session?.close();
});

/** Writes the workspace's settings (`.vscode/settings.json`: code-server watches the workspace;
 *  the folder is trusted here) and waits for the server that starts with them (a changed server
 *  setting restarts it). */
async function restartWithSettings(page: Page, settings: Record<string, unknown>): Promise<void> {
  const [before] = session.serverPids();
  mkdirSync(path.join(session.workspace, ".vscode"), { recursive: true });
  writeFileSync(path.join(session.workspace, ".vscode", "settings.json"), JSON.stringify(settings, null, 2));
  await waitFor("a restarted server", () => {
    const pids = session.serverPids();
    return pids.length === 1 && pids[0] !== before ? true : undefined;
  }, 60_000);
  await chatState(page, "connection", "running", 60_000);
}

/** Whether `element`'s middle is inside its document's viewport and nothing covers it there: a
 *  click lands on it without scrolling anything. */
function reachable(element: HTMLElement): boolean {
  const box = element.getBoundingClientRect();
  const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
  return hit !== null && (hit === element || element.contains(hit));
}

test("on a fresh profile the other Tiller views start collapsed, so the chat has the side bar", { timeout: 60_000 }, async () => {
  await step("views-collapsed", async (page) => {
    const header = (name: string) => page.locator(".part.sidebar .pane-header", { hasText: name }).first();
    await header("Chat").waitFor({ timeout: 20_000 });
    assert.equal(await header("Chat").getAttribute("aria-expanded"), "true");
    for (const name of ["Todos", "Permissions", "MCP Servers"]) {
      assert.equal(await header(name).getAttribute("aria-expanded"), "false", `${name} starts collapsed`);
    }
  });
});

test("an empty Permissions view says where rules come from, and its Add a Rule asks for one", { timeout: 120_000 }, async () => {
  await step("permissions-welcome", async (page) => {
    await startNewChat(page);
    await runCommand(page, "Tiller: Focus on Permissions View");
    const welcome = page.locator(".part.sidebar .welcome-view-content", { hasText: "No permission rules yet" });
    await welcome.waitFor({ timeout: 30_000 });
    const said = await welcome.innerText();
    for (const file of [".tiller/settings.local.json", ".tiller/settings.json", "~/.config/tiller/settings.json", ".claude/settings.json"]) {
      assert.ok(said.includes(file), `names ${file}: ${said}`);
    }
    await screenshot(page, "permissions-welcome");
    await welcome.locator(".monaco-button", { hasText: "Add a Rule" }).click();
    await page.locator(".quick-input-widget", { hasText: "Add a Permission Rule" }).waitFor({ timeout: 10_000 });
    await page.keyboard.press("Escape");
    await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10_000 });
    // Back to the chat's room for the tests that follow.
    await page.locator(".part.sidebar .pane-header", { hasText: "Permissions" }).first().click();
  });
});

test("a plan taller than the chat keeps Approve in view; the chat opened in an editor tab answers the same card", { timeout: 180_000 }, async () => {
  const plan = ["A long plan:", ...Array.from({ length: 80 }, (_, i) => `${i + 1}. Step ${i + 1} of the long change`)].join("\n");
  await session.fake.load([
    { content: [text("Here is the plan."), { type: "tool_use", id: "toolu_long_plan", name: "exit_plan_mode", input: { plan } }] },
    { content: [{ type: "tool_use", id: "toolu_long_write", name: "write_file", input: { path: "long-plan.txt", content: "done\n" } }] },
    { content: [text("Carried out the long plan.")] },
  ]);
  await step("long-plan", async (page, chat) => {
    await startNewChat(page);
    await setMode(page, "plan");
    await send(page, "Plan a long change");
    const card = chat.locator('.card.plan[data-state="pending"]');
    await card.waitFor({ timeout: 30_000 });
    const log = await chat.locator("#log").boundingBox();
    const cardBox = await card.boundingBox();
    assert.ok(log !== null && cardBox !== null);
    assert.ok(cardBox.height > log.height, `the plan (${cardBox.height}px) is taller than the chat (${log.height}px)`);
    // Where the chat put it, without any scrolling here: the plan's start and its Approve.
    assert.ok(await card.locator("button.approve").evaluate(reachable), "Approve is in view and not covered");
    assert.ok(await card.locator(".card-title").evaluate(reachable), "the plan's title is in view");
    await screenshot(page, "long-plan-side-bar");

    await runCommand(page, "Tiller: Open Chat in Editor");
    const editor = editorChatFrame(page);
    const inTab = editor.locator('.card.plan[data-state="pending"]');
    await inTab.waitFor({ timeout: 30_000 });
    assert.match(await inTab.innerText(), /Step 80 of the long change/);
    assert.ok(await inTab.locator("button.approve").evaluate(reachable), "Approve is in view in the editor tab");
    await screenshot(page, "long-plan-editor-tab");
    await inTab.locator('input[value="acceptEdits"]').check();
    await answerCard(inTab, "button.approve");
    // One chat: the side bar's card shows the answer given in the tab.
    await chat.locator('.card.plan[data-state="approved"]').waitFor({ timeout: 30_000 });
    const file = path.join(session.workspace, "long-plan.txt");
    await waitFor("long-plan.txt on disk", () => (existsSync(file) ? true : undefined), 30_000);
    await editor.locator(".msg.assistant", { hasText: "Carried out the long plan." }).waitFor({ timeout: 30_000 });
    await waitIdle(page);
    assert.equal(readFileSync(file, "utf8"), "done\n");
    await runCommand(page, "View: Close All Editors");
    await editorChatIframe(page).waitFor({ state: "detached", timeout: 20_000 });
  });
});

test("tiller.webSearch.enabled gives the model web search, with its domains; a search shows in the tool log", { timeout: 240_000 }, async () => {
  const searchId = "srvtoolu_e2e_search";
  await step("web-search", async (page, chat) => {
    await startNewChat(page);
    await restartWithSettings(page, { "tiller.webSearch.enabled": true, "tiller.webSearch.allowedDomains": ["pypi.org"] });
    try {
      await session.fake.load([
        {
          content: [
            { type: "server_tool_use", id: searchId, name: "web_search", input: { query: "pygls release" } },
            {
              type: "web_search_tool_result",
              tool_use_id: searchId,
              content: [{ type: "web_search_result", url: "https://pypi.org/project/pygls/", title: "pygls on PyPI", encrypted_content: "EqgfCioIARgBIiQ3YTRm", page_age: "May 2, 2026" }],
            },
            text("pygls 2 is out."),
          ],
        },
      ]);
      await send(page, "Is there a new pygls?");
      const row = chat.locator(`.tool.ok[data-tool-use-id="${searchId}"]`);
      await row.waitFor({ timeout: 30_000 });
      assert.equal((await row.locator(".tool-name").innerText()).trim(), "web_search");
      assert.match(await row.innerText(), /pygls release/);
      await chat.locator(".msg.assistant", { hasText: "pygls 2 is out." }).waitFor({ timeout: 30_000 });
      await waitIdle(page);
      const tools = (session.fake.messageRequests()[0]?.tools ?? []) as Array<Record<string, unknown>>;
      const search = tools.find((tool) => tool.name === "web_search");
      assert.equal(search?.type, "web_search_20250305");
      assert.deepEqual(search?.allowed_domains, ["pypi.org"]);
      assert.ok(!tools.some((tool) => tool.name === "web_fetch"), "web fetch stays off");
    } finally {
      await restartWithSettings(page, {});
    }
  });
});

test("the status bar and the chat's footer say the offline demo plays, in the model's place", { timeout: 120_000 }, async () => {
  await step("demo-status", async (page, chat) => {
    await startNewChat(page);
    await restartWithSettings(page, { "tiller.demoScript": "demo" });
    try {
      await statusShows(page, "offline demo", 30_000);
      const shown = (await statusItem(page).innerText()).trim();
      assert.match(shown, /^ask before edits · offline demo$/);
      await chat.locator("#mode", { hasText: "offline demo" }).waitFor({ timeout: 10_000 });
      assert.equal((await chat.locator("#mode").innerText()).trim(), "ask before edits · offline demo");
      await screenshot(page, "demo-status");
    } finally {
      await restartWithSettings(page, {});
    }
  });
});

// Last: after a window reload, a restored editor tab once came back into the tests that followed
// (a flake seen once in CI, not understood yet: see the closing note).
test("the chat's editor tab comes back after a window reload, on the same chat", { timeout: 240_000 }, async () => {
  await step("editor-tab-reload", async (page, chat) => {
    await startNewChat(page);
    const sessionId = (await chat.locator("body").getAttribute("data-session")) ?? "";
    assert.notEqual(sessionId, "");
    await runCommand(page, "Tiller: Open Chat in Editor");
    await editorChatFrame(page).locator(`body[data-session=${JSON.stringify(sessionId)}]`).waitFor({ timeout: 30_000 });
    // The reload navigates the page: wait for that, not for a status bar the old page still shows.
    const reloading = page.waitForEvent("framenavigated", { predicate: (frame) => frame === page.mainFrame(), timeout: 60_000 });
    await runCommand(page, "Developer: Reload Window");
    await reloading;
    await statusItem(page).waitFor({ timeout: 90_000 });
    await statusShows(page, "·", 90_000);
    await editorChatFrame(page).locator(`body[data-session=${JSON.stringify(sessionId)}]`).waitFor({ timeout: 60_000 });
    await editorChatFrame(page).locator(".welcome").waitFor({ timeout: 20_000 });
    await screenshot(page, "editor-tab-restored");
    await runCommand(page, "View: Close All Editors");
    await editorChatIframe(page).waitFor({ state: "detached", timeout: 20_000 });
    // The side bar's chat, as the tests that follow use it.
    await runCommand(page, "Tiller: Open Chat");
    await chatFrame(page).locator("#input").waitFor({ timeout: 60_000 });
  });
});
