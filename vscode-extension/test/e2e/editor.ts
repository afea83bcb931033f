// Issue 22 end to end in code-server: the editor is the context. @-mentions from a fuzzy
// picker, the active editor as a chip that can be turned off, pasted images as thumbnails,
// diagnostics after edits from VS Code's own TypeScript server, an old edit's diff with its
// real before, tool rows that link to the file at the line. Run in the shared session of
// plain-workspace.test.ts, in order, after the tiller module and before the chat: its `before`
// makes the workspace a git repository of TypeScript files, and its `after` takes back all it
// leaves (editors, terminal, the editor chip turned off, the clipboard permission, the files
// and the repository), so the chat module sees the workspace the tiller module left.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { deflateSync } from "node:zlib";
import { after, before, test } from "node:test";
import type { FrameLocator, Page } from "playwright-core";
import { chatFrame, inNewSharedChat, openQuickInput, runCommand, screenshots, setMode, steps, tool, waitFor, waitIdle, type Session } from "./harness";

let session: Session;
const screenshot = screenshots("editor");

/** A `size`×`size` PNG of diagonal stripes, base64 (a real image to paste and to look at). */
function stripesPng(size: number): string {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer): number => {
    let c = 0xffffffff;
    for (const byte of bytes) c = (crcTable[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Array.from({ length: size }, (_, y) =>
    Buffer.from([0, ...Array.from({ length: size }, (_, x) => (Math.floor((x + y) / 8) % 2 === 0 ? [0x1e, 0x90, 0xff] : [0xff, 0xa5, 0x00])).flat()]),
  );
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", header), chunk("IDAT", deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
  return png.toString("base64");
}

// A 64×64 PNG, and the first bytes of a BMP (a type the model does not take).
const PNG = stripesPng(64);
const BMP = "Qk06AAAAAAAAADYAAAAoAAAAAQAAAAEAAAABABgAAAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAA////AA==";

/** What the module's `before` adds to the workspace (README.md it changes, and puts back). */
const ADDED = ["src", "changelog.md", "debug.log", ".gitignore", ".git"];

const step = steps(() => session, screenshot);

/** Waits for the answer `text` to show, then for the turn to end. */
async function waitAnswer(page: Page, text: string): Promise<void> {
  await chatFrame(page).locator(".msg.assistant", { hasText: text }).last().waitFor({ timeout: 60_000 });
  await waitIdle(page);
}

async function openFile(page: Page, name: string): Promise<void> {
  const input = await openQuickInput(page, "Control+P");
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
  await input.press("Enter");
  await page.locator(".tab.active", { hasText: name }).waitFor();
}

type Block = Record<string, unknown> & { type: string; text?: string };

/** The content blocks of the last user message of the last request the model got. */
function lastUserBlocks(): Block[] {
  const requests = session.fake.messageRequests();
  const messages = (requests[requests.length - 1]?.messages ?? []) as Array<{ role: string; content: Block[] | string }>;
  const content = messages[messages.length - 1]?.content ?? [];
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** Every tool_result text of every request, by tool_use_id. */
function toolResults(): Map<string, string> {
  const out = new Map<string, string>();
  for (const body of session.fake.messageRequests()) {
    for (const message of (body.messages ?? []) as Array<{ content: Block[] | string }>) {
      if (typeof message.content === "string") continue;
      for (const block of message.content) {
        if (block.type !== "tool_result") continue;
        const content = block.content;
        const text = typeof content === "string" ? content : Array.isArray(content) ? (content as Block[]).map((part) => part.text ?? "").join("") : "";
        out.set(String(block.tool_use_id), text);
      }
    }
  }
  return out;
}

const option = (chat: FrameLocator, text: string) => chat.locator("#mention-picker .mention-option", { hasText: text });

export function editorTests(): void {
  inNewSharedChat((shared) => (session = shared));
  let readme = "";

  before(() => {
    const ws = session.workspace;
    readme = readFileSync(path.join(ws, "README.md"), "utf8");
    mkdirSync(path.join(ws, "src"), { recursive: true });
    // A type error to start with: the Problems list has something, and TypeScript reports.
    writeFileSync(path.join(ws, "src", "app.ts"), 'export function greet(name: string): string {\n  return "hi " + name;\n}\n\nexport const broken: number = "not a number";\n');
    writeFileSync(path.join(ws, "src", "shapes.ts"), "export function areaOfCircle(radius: number): number {\n  return Math.PI * radius * radius;\n}\n\nexport const unit = 1;\n");
    writeFileSync(path.join(ws, "changelog.md"), "# Changes\n");
    writeFileSync(path.join(ws, "debug.log"), "secret noise\n");
    writeFileSync(path.join(ws, ".gitignore"), "*.log\n");
    const git = (...args: string[]): void => {
      const done = spawnSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@example.com", ...args], { cwd: ws, encoding: "utf8" });
      assert.equal(done.status, 0, done.stderr);
    };
    git("init", "-q");
    git("add", "-A");
    git("commit", "-qm", "start");
    writeFileSync(path.join(ws, "README.md"), "# e2e workspace\n\nAn uncommitted line.\n");
  });

  // What the chat module would otherwise meet: an open editor goes with its prompts (the chip),
  // a diff editor would be the one its tests look at, a terminal keeps the panel open; and the
  // files, the Problems list and the repository are this module's alone.
  after(async () => {
    if (session === undefined) return; // the session never started
    const { page, workspace } = session;
    const chat = chatFrame(page);
    // The editor chip (turned off by the second test) back on: it shows while an editor is active.
    await openFile(page, "README.md");
    const chip = chat.locator("#attachments .chip.active-editor", { hasText: "README.md" });
    await chip.waitFor();
    if ((await chip.getAttribute("aria-checked")) === "false") await chip.click();
    await chat.locator('#attachments .chip.active-editor[aria-checked="true"]').waitFor({ timeout: 10_000 });
    await runCommand(page, "View: Close All Editors");
    await page.locator(".editor-group-container .tab").first().waitFor({ state: "detached", timeout: 10_000 });
    await chat.locator("#attachments .chip.active-editor").waitFor({ state: "detached", timeout: 10_000 });
    await runCommand(page, "Terminal: Kill All Terminals");
    await page.locator(".terminal-wrapper").first().waitFor({ state: "detached", timeout: 30_000 });
    await page.context().clearPermissions();
    for (const name of ADDED) rmSync(path.join(workspace, name), { recursive: true, force: true });
    writeFileSync(path.join(workspace, "README.md"), readme);
    await screenshot(page, "taken-back");
  });

  test("@ opens a fuzzy picker without ignored files; picked mentions and the editor chip reach the model", { timeout: 180_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "It greets." }] }]);
    await step("mention-picker", async (page, chat) => {
      await openFile(page, "app.ts");
      const input = chat.locator("#input");
      await chat.locator("#attachments .chip.active-editor", { hasText: "app.ts" }).waitFor();
      await input.click();
      await input.pressSequentially("@log");
      await option(chat, "changelog.md").waitFor();
      const listed = await chat.locator("#mention-picker").innerText();
      assert.doesNotMatch(listed, /debug\.log/, "a .gitignore'd file is not offered");
      await input.fill("");
      await input.pressSequentially("Explain @app");
      await option(chat, "src/app.ts").waitFor();
      await screenshot(page, "picker-open");
      await input.press("Enter");
      await chat.locator("#attachments .chip.mention.file", { hasText: "@src/app.ts" }).waitFor();
      assert.equal(await input.inputValue(), "Explain @src/app.ts ");
      await input.pressSequentially("and @prob");
      await option(chat, "problems").waitFor();
      await input.press("Enter");
      await input.pressSequentially("and @dif");
      await option(chat, "diff").waitFor();
      await input.press("Enter");
      await chat.locator("#attachments .chip.mention.diff").waitFor();
      // TypeScript has reported app.ts's error (the Problems count in the status bar).
      await page.locator('[id="status.problems"]', { hasText: /[1-9]/ }).waitFor({ timeout: 60_000 });
      await screenshot(page, "chips-before-sending");
      await input.press("Enter");
      await waitAnswer(page, "It greets.");
      const user = chat.locator(".msg.user").last();
      await user.locator(".sent-attachments .chip", { hasText: "@problems" }).waitFor();
      const blocks = lastUserBlocks();
      const texts = blocks.map((block) => block.text ?? "");
      assert.ok(texts.some((text) => text.startsWith('<context kind="file" name="src/app.ts">') && text.includes("greet")), "the file's contents");
      assert.ok(texts.some((text) => text.startsWith('<context kind="problems"') && text.includes("not assignable")), "the Problems list");
      assert.ok(texts.some((text) => text.startsWith('<context kind="diff"') && text.includes("+An uncommitted line.")), "git diff");
      assert.equal(texts.filter((text) => text.includes('kind="file" name="src/app.ts"')).length, 1, "the active file, mentioned too, goes once");
      assert.equal(texts[texts.length - 1], "Explain @src/app.ts and @problems and @diff");
    });
  });

  test("the active editor's selection is a chip; turned off, nothing of the editor is sent", { timeout: 120_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "A selection." }] }, { content: [{ type: "text", text: "Nothing attached." }] }]);
    await step("editor-chip", async (page, chat) => {
      await page.locator(".tab.active", { hasText: "app.ts" }).click();
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Home");
      await page.keyboard.press("Shift+ArrowDown");
      await page.keyboard.press("Shift+ArrowDown");
      const chip = chat.locator("#attachments .chip.active-editor", { hasText: "app.ts:1-2" });
      await chip.waitFor();
      const input = chat.locator("#input");
      await input.click();
      await input.fill("What does this do?");
      await input.press("Enter");
      await waitAnswer(page, "A selection.");
      const selection = lastUserBlocks().find((block) => (block.text ?? "").startsWith('<context kind="selection"'));
      assert.ok(selection !== undefined, "the selection went with the prompt");
      assert.match(selection.text ?? "", /path: src\/app\.ts, lines 1-2\nexport function greet/);
      await chip.click();
      await chat.locator("#attachments .chip.active-editor.off").waitFor();
      await screenshot(page, "editor-chip-off");
      await input.fill("And now?");
      await input.press("Enter");
      await waitAnswer(page, "Nothing attached.");
      assert.deepEqual(lastUserBlocks().map((block) => block.type), ["text"]);
      assert.equal(lastUserBlocks()[0]?.text, "And now?");
    });
  });

  test("a pasted image shows as a thumbnail in the input and the chat and reaches the model as an image block", { timeout: 120_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "A tiny image." }] }]);
    await step("pasted-image", async (page, chat) => {
      const input = chat.locator("#input");
      const paste = async (name: string, base64: string, type: string): Promise<void> => {
        await input.evaluate(
          (element, file) => {
            const bytes = Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], file.name, { type: file.type }));
            element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
          },
          { name, base64, type },
        );
      };
      await paste("old.bmp", BMP, "image/bmp");
      await chat.locator("#attachments .attach-problem", { hasText: "not a PNG, JPEG, GIF or WebP image" }).waitFor();
      await paste("stripes.png", PNG, "image/png");
      await chat.locator("#attachments .chip.image img").waitFor();
      // Dropped on the input, as from a file manager: a second thumbnail; removed again with ×.
      await input.evaluate((element, base64) => {
        const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], "dropped.png", { type: "image/png" }));
        element.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }, PNG);
      await chat.locator("#attachments .chip.image", { has: chat.locator('img[alt="dropped.png"]') }).waitFor();
      await chat.locator("#attachments .chip.image", { has: chat.locator('img[alt="dropped.png"]') }).locator(".chip-remove").click();
      await waitFor("one image left", async () => ((await chat.locator("#attachments .chip.image").count()) === 1 ? true : undefined), 10_000);
      await screenshot(page, "image-in-input");
      await input.fill("What is in this image?");
      await input.press("Enter");
      await waitAnswer(page, "A tiny image.");
      await chat.locator(".msg.user").last().locator(".sent-attachments img.thumb").waitFor();
      const image = lastUserBlocks().find((block) => block.type === "image");
      assert.deepEqual(image?.source, { type: "base64", media_type: "image/png", data: PNG });
    });
  });

  test("an edit that introduces a type error gets VS Code's diagnostics in its result; the model fixes it next", { timeout: 180_000 }, async () => {
    writeFileSync(path.join(session.workspace, "README.md"), "# e2e workspace\n\nAn uncommitted line.\n");
    await session.fake.load([
      { content: [tool("toolu_bad", "write_file", { path: "src/count.ts", content: 'export const count: number = "three";\n' })] },
      { content: [tool("toolu_fix", "edit_file", { path: "src/count.ts", old_string: '"three"', new_string: "3" })] },
      { content: [tool("toolu_rd", "read_file", { path: "README.md" })] },
      { content: [tool("toolu_readme", "write_file", { path: "README.md", content: "# Tiller e2e\n" })] },
      { content: [{ type: "text", text: "Fixed the type error and retitled the README." }] },
    ]);
    await step("diagnostics-after-edit", async (page, chat) => {
      await setMode(page, "accept edits");
      await chat.locator("#attachments .chip.active-editor.off").waitFor();
      const input = chat.locator("#input");
      await input.fill("Add a count");
      await input.press("Enter");
      await waitAnswer(page, "Fixed the type error");
      const results = toolResults();
      assert.match(results.get("toolu_bad") ?? "", /The edit introduced these errors[\s\S]*src\/count\.ts:1:14: Type 'string' is not assignable to type 'number'\. \[ts\]/);
      assert.doesNotMatch(results.get("toolu_fix") ?? "", /introduced/);
      assert.equal(readFileSync(path.join(session.workspace, "src", "count.ts"), "utf8"), "export const count: number = 3;\n");
      const row = chat.locator('.tool[data-tool-use-id="toolu_bad"]');
      await row.locator(".tool-head .chevron").click();
      await row.locator(".output", { hasText: "not assignable" }).waitFor();
    });
  });

  test("an old write_file's diff opens with its real before; a tool row links to the file at the line", { timeout: 120_000 }, async () => {
    await step("edit-history-and-links", async (page, chat) => {
      await runCommand(page, "Tiller: Restart Server");
      await chat.locator(".notice", { hasText: "The Tiller server restarted" }).waitFor({ timeout: 90_000 });
      const row = chat.locator('.tool.ok[data-tool-use-id="toolu_readme"]');
      await row.waitFor({ timeout: 30_000 });
      await row.locator("button.diffstat").click();
      const diff = page.locator(".monaco-diff-editor").first();
      await diff.locator(".editor.original .view-lines", { hasText: "An uncommitted line." }).waitFor({ timeout: 15_000 });
      await diff.locator(".editor.modified .view-lines", { hasText: "Tiller e2e" }).waitFor();
      await screenshot(page, "old-edit-diff");
      const link = chat.locator('.tool[data-tool-use-id="toolu_fix"] a.file-link');
      assert.equal(await link.innerText(), "src/count.ts:1");
      await link.click();
      await page.locator(".tab.active", { hasText: "count.ts" }).waitFor();
    });
  });

  test("@terminal sends the last command of a terminal and what it printed", { timeout: 180_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "It printed the marker." }] }]);
    await step("terminal-mention", async (page, chat) => {
      // The output of a command that ends at once comes from the terminal's copy of it, through
      // the clipboard (which the browser guards).
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
      await runCommand(page, "Terminal: Create New Terminal");
      const terminal = page.locator(".terminal-wrapper.active .xterm");
      await terminal.waitFor({ timeout: 60_000 });
      // Shell integration (which the capture reads through) is on once the prompt's decoration
      // shows; then the command runs in it, its output unlike its command line. The renderer
      // draws on a canvas: the command's end shows as its decoration turning to success.
      const decoration = ".terminal-wrapper.active .terminal-command-decoration";
      await page.locator(decoration).first().waitFor({ timeout: 60_000 });
      await terminal.click();
      await page.keyboard.type("echo TILLER_MARK_$((6 * 7))");
      await page.keyboard.press("Enter");
      await page.locator(`${decoration}.codicon-terminal-decoration-success`).first().waitFor({ timeout: 30_000 });
      await screenshot(page, "terminal-ran");
      const input = chat.locator("#input");
      await input.click();
      await input.fill("");
      await input.pressSequentially("What did it print? @term");
      await option(chat, "terminal").waitFor();
      await input.press("Enter");
      await chat.locator("#attachments .chip.mention.terminal").waitFor();
      await screenshot(page, "terminal-chip");
      await input.press("Enter");
      await waitAnswer(page, "It printed the marker.");
      const terminalBlock = lastUserBlocks().find((block) => (block.text ?? "").startsWith('<context kind="terminal"'));
      assert.ok(terminalBlock !== undefined, `a terminal block went with the prompt: ${JSON.stringify(lastUserBlocks())}`);
      assert.match(terminalBlock.text ?? "", /\$ echo TILLER_MARK_\$\(\(6 \* 7\)\)\n[\s\S]*TILLER_MARK_42/);
    });
  });

  test("a symbol picked from the @-picker sends its source", { timeout: 180_000 }, async () => {
    await session.fake.load([{ content: [{ type: "text", text: "It computes an area." }] }]);
    await step("symbol-mention", async (page, chat) => {
      await openFile(page, "shapes.ts");
      const input = chat.locator("#input");
      await input.click();
      await input.fill("");
      // TypeScript's workspace symbols come once its server has loaded the project: type again
      // until the symbol is offered.
      const symbol = chat.locator("#mention-picker .mention-option.symbol", { hasText: /areaOfCircle(\(\))? — src\/shapes\.ts:1/ });
      await waitFor(
        "the symbol in the picker",
        async () => {
          await input.fill("");
          await input.pressSequentially("Explain @areaOfCir");
          return (await symbol.waitFor({ timeout: 5_000 }).then(() => true, () => false)) ? true : undefined;
        },
        90_000,
      );
      await screenshot(page, "symbol-picker");
      await symbol.first().dispatchEvent("mousedown");
      await chat.locator("#attachments .chip.mention.symbol", { hasText: "areaOfCircle" }).waitFor();
      await input.press("Enter");
      await waitAnswer(page, "It computes an area.");
      const block = lastUserBlocks().find((candidate) => (candidate.text ?? "").startsWith('<context kind="symbol"'));
      assert.ok(block !== undefined, `a symbol block went with the prompt: ${JSON.stringify(lastUserBlocks())}`);
      assert.match(block.text ?? "", /name="areaOfCircle(\(\))?"/);
      assert.match(block.text ?? "", /return Math\.PI \* radius \* radius;/);
      assert.doesNotMatch(block.text ?? "", /export const unit/, "only the symbol's lines");
    });
  });
}
