// Issue 22 item 5 in code-server: a `.code-workspace` with two folders ("workspace", the
// primary, and "api"). The @-picker offers the second folder's files under its name; a
// scripted model response edits a file in the second folder by its folder-qualified path; the
// chat shows the diff; one rewind puts both folders back on disk.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import type { FrameLocator } from "playwright-core";
import { screenshots, setMode, startChatSession, steps, tool, waitFor, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("multiroot");
let api: string;

before(
  async () => {
    session = await startChatSession(["api"]);
    api = session.folders[1] ?? "";
    writeFileSync(path.join(api, "server.py"), "PORT = 8000\n");
    writeFileSync(path.join(session.workspace, "app.txt"), "version 1\n");
    // Each folder a repository of its own, as projects are (the run directory sits inside this
    // repository's ignored .e2e-cache: git would call every file ignored).
    for (const folder of session.folders) {
      const done = spawnSync("git", ["init", "-q"], { cwd: folder, encoding: "utf8" });
      assert.equal(done.status, 0, done.stderr);
    }
  },
  { timeout: 300_000 },
);

after(async () => {
  await session?.close();
});

const step = steps(() => session, screenshot);

const option = (chat: FrameLocator, text: string) => chat.locator("#mention-picker .mention-option", { hasText: text });

test("the @-picker offers the second folder's files under the folder's name", { timeout: 120_000 }, async () => {
  await step("multiroot-picker", async (_page, chat) => {
    const input = chat.locator("#input");
    await input.click();
    await input.pressSequentially("@server");
    await option(chat, "api/server.py").waitFor({ timeout: 30_000 });
    await input.fill("");
  });
});

test("an edit in the second folder shows its diff, and one rewind restores both folders", { timeout: 180_000 }, async () => {
  await session.fake.load([
    { content: [tool("toolu_r1", "read_file", { path: "api/server.py" }), tool("toolu_r2", "read_file", { path: "app.txt" })] },
    {
      content: [
        tool("toolu_e1", "edit_file", { path: "api/server.py", old_string: "8000", new_string: "9000" }),
        tool("toolu_e2", "edit_file", { path: "app.txt", old_string: "version 1", new_string: "version 2" }),
      ],
    },
    { content: [{ type: "text", text: "Edited both folders." }] },
  ]);
  await step("multiroot-edit-diff", async (page, chat) => {
    // The model learns the folders in the system prompt.
    await setMode(page, "accept edits");
    const input = chat.locator("#input");
    await input.click();
    await input.fill("Move the API to port 9000");
    await input.press("Enter");
    const row = chat.locator('.tool.ok[data-tool-use-id="toolu_e1"]');
    await row.waitFor({ timeout: 30_000 });
    await chat.locator(".msg.assistant", { hasText: "Edited both folders." }).waitFor({ timeout: 30_000 });
    await waitIdle(page);
    assert.match(await row.innerText(), /api\/server\.py/);
    assert.equal(readFileSync(path.join(api, "server.py"), "utf8"), "PORT = 9000\n");
    assert.equal(readFileSync(path.join(session.workspace, "app.txt"), "utf8"), "version 2\n");
    const system = JSON.stringify(session.fake.messageRequests()[0]?.system ?? "");
    assert.ok(system.includes("<workspace-folders>") && system.includes(`- api: ${api}`), "the folders in the system prompt");
    await row.locator("button.diffstat").click();
    const diff = page.locator(".monaco-diff-editor").first();
    await diff.locator(".editor.original .view-lines", { hasText: "PORT = 8000" }).waitFor({ timeout: 15_000 });
    await diff.locator(".editor.modified .view-lines", { hasText: "PORT = 9000" }).waitFor();
  });
  await step("multiroot-rewound", async (page, chat) => {
    const prompt = chat.locator(".msg.user", { hasText: "Move the API to port 9000" });
    await prompt.hover();
    await prompt.locator("button.rewind").click();
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ timeout: 20_000 });
    const listed = await dialog.innerText();
    assert.match(listed, /api\/server\.py/);
    assert.match(listed, /app\.txt/);
    await screenshot(page, "multiroot-rewind-dry-run");
    await dialog.locator(".monaco-button", { hasText: "Rewind Files and Conversation" }).click();
    await chat.locator(".notice button.undo-rewind").waitFor({ timeout: 20_000 });
    await waitFor("both folders rewound", () => (readFileSync(path.join(api, "server.py"), "utf8") === "PORT = 8000\n" ? true : undefined), 10_000);
    assert.equal(readFileSync(path.join(session.workspace, "app.txt"), "utf8"), "version 1\n");
    await setMode(page, "ask before edits");
  });
});

test("a folder added to the workspace reaches the server and the model with the next prompt", { timeout: 180_000 }, async () => {
  const docs = path.join(path.dirname(session.workspace), "docs");
  mkdirSync(docs, { recursive: true });
  writeFileSync(path.join(docs, "guide.md"), "# The guide\n");
  await session.fake.load([
    { content: [tool("toolu_g", "read_file", { path: "docs/guide.md" })] },
    { content: [{ type: "text", text: "Read the guide." }] },
  ]);
  await step("multiroot-folder-added", async (page, chat) => {
    // VS Code follows its .code-workspace file: the new folder joins, and vscode-languageclient
    // sends workspace/didChangeWorkspaceFolders.
    const file = path.join(path.dirname(session.workspace), "e2e.code-workspace");
    writeFileSync(file, JSON.stringify({ folders: [{ path: "workspace" }, { path: "api" }, { path: "docs" }] }, null, 2));
    await chat.locator(".notice", { hasText: "Workspace folders" }).last().waitFor({ timeout: 30_000 });
    const input = chat.locator("#input");
    await input.click();
    await input.fill("Read the guide");
    await input.press("Enter");
    await chat.locator(".msg.assistant", { hasText: "Read the guide." }).waitFor({ timeout: 30_000 });
    await waitIdle(page);
    const requests = session.fake.messageRequests();
    const asked = requests[requests.length - 2]?.messages as Array<{ content: Array<{ type: string; text?: string }> }>;
    const told = asked[asked.length - 1]?.content.map((block) => block.text ?? "") ?? [];
    assert.ok(told[0]?.startsWith("The workspace folders changed.") && told[0].includes(`- docs: ${docs}`), told.join("\n"));
    assert.match(await chat.locator('.tool.ok[data-tool-use-id="toolu_g"]').innerText(), /docs\/guide\.md/);
  });
});
