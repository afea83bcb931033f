// The chat webview: renders the chat the extension sends as patches (what changed since the
// last one), and posts back what the user does. It keeps no agent state of its own: a copy of
// the chat it was sent, and view state (what is expanded, timers).
import type { FromWebview, ToWebview } from "../chat/messages";
import type { CommandListItem, ToolDecision } from "../protocol";
import type { ChatItem, CommandSegment, Confirmation } from "../chat/items";
import { showsWelcome } from "../chat/notices";
import { formatDiffStat, formatDuration, MODE_WORDS, plural, toolMark, usageText } from "../chat/words";
import { type AgentView, currentTool } from "../chat/agents";
import { applyPatch, type ChatView } from "../chat/patch";
import { attachmentsView, Composer } from "./attach";
import { slashHint, slashMatches } from "../chat/slash";
import { MANAGE_TRUST_COMMAND, untrustedWelcome } from "../trustText";
import { createMarkdownRenderer } from "./markdown";

interface VsCodeApi {
  postMessage(message: FromWebview): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const renderMarkdown = createMarkdownRenderer(window);

const log = document.getElementById("log") as HTMLElement;
const queue = document.getElementById("queue") as HTMLElement;
const composer = document.getElementById("composer") as HTMLFormElement;
const input = document.getElementById("input") as HTMLTextAreaElement;
const slashList = document.getElementById("slash") as HTMLUListElement;
const modeLabel = document.getElementById("mode") as HTMLElement;
const usageLabel = document.getElementById("usage") as HTMLElement;
const stop = document.getElementById("stop") as HTMLButtonElement;
const attachments = new Composer(input, (message) => vscode.postMessage(message));

/** Code blocks longer than this many lines, and tool outputs longer than OUTPUT_LINES, start
 *  collapsed. */
const CODE_LINES = 40;
const OUTPUT_LINES = 20;
const EDIT_TOOLS = new Set(["write_file", "edit_file"]);

let current: ChatView | null = null;
/** Rendered items by id, with the item they were rendered from (`stale`: view state changed). */
const rendered = new Map<string, { item: ChatItem; element: HTMLElement; stale: boolean }>();
/** View state that survives re-renders: tool rows the user opened or closed, expanded blocks. */
const toolOpen = new Map<string, boolean>();
const expanded = new Set<string>();
/** When this view first saw a tool running (the elapsed timer counts from there). */
const runningSince = new Map<string, number>();

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; title?: string; [data: `data-${string}`]: string } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined) continue;
    if (key === "className") element.className = value;
    else if (key === "text") element.textContent = value;
    else if (key === "title") element.title = value;
    else element.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) {
      element.append(child);
    }
  }
  return element;
}

function button(label: string, className: string, onClick: () => void, title?: string): HTMLButtonElement {
  const element = h("button", { className, text: label, ...(title !== undefined ? { title } : {}) });
  element.type = "button";
  element.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return element;
}

// --- markdown, code blocks, tables -------------------------------------------------------

/** Copy buttons, language labels and collapsing on code blocks; a scroll box around tables. */
function enhance(element: HTMLElement, key: string): void {
  element.querySelectorAll("pre > code").forEach((code, index) => {
    const pre = code.parentElement as HTMLElement;
    const text = code.textContent ?? "";
    const lines = text.replace(/\n$/, "").split("\n").length;
    const lang = /language-([\w+-]+)/.exec(code.className)?.[1] ?? "";
    if (lang !== "" || code.querySelector("span[class^='hljs']") !== null) code.classList.add("hljs");
    const blockKey = `${key}:${index}`;
    const block = h("div", { className: "code-block" });
    const head = h("div", { className: "code-head" }, h("span", { className: "code-lang", text: lang !== "" ? lang : "text" }), h("span", { className: "code-lines", text: plural(lines, "line") }), button("Copy", "code-copy", () => vscode.postMessage({ type: "copy", text }), "Copy to the clipboard"));
    pre.replaceWith(block);
    block.append(head, pre);
    if (lines > CODE_LINES) {
      const open = expanded.has(blockKey);
      block.classList.toggle("collapsed", !open);
      block.append(
        button(open ? "Show less" : `Show all ${lines} lines`, "expand", () => {
          if (expanded.has(blockKey)) expanded.delete(blockKey);
          else expanded.add(blockKey);
          rerender(key);
        }),
      );
    }
  });
  element.querySelectorAll("table").forEach((table) => {
    const wrap = h("div", { className: "table-wrap" });
    table.replaceWith(wrap);
    wrap.append(table);
  });
}

function markdownBlock(text: string, className: string, key: string): HTMLElement {
  const element = h("div", { className });
  element.innerHTML = renderMarkdown(text);
  enhance(element, key);
  return element;
}

function rerender(id: string): void {
  const itemId = id.split(":")[0] ?? id;
  const entry = rendered.get(itemId);
  if (entry !== undefined) entry.stale = true;
  if (current !== null) renderLog(current.items);
}

// --- cards -------------------------------------------------------------------------------

function feedbackBox(placeholder: string): HTMLTextAreaElement {
  const box = h("textarea", { className: "feedback" });
  box.rows = 2;
  box.placeholder = placeholder;
  return box;
}

function decided(text: string, className: string): HTMLElement {
  return h("div", { className: `decision ${className}`, text });
}

/** A pending card's answer: its choices, feedback box and buttons, which stay in view at the
 *  bottom of the chat while any of the card shows (a long plan in a short side bar included). */
function answerBar(...children: Child[]): HTMLElement {
  return h("div", { className: "answer" }, ...children);
}

function renderPlan(item: Extract<ChatItem, { kind: "plan" }>): HTMLElement {
  const card = h("div", { className: "card plan", "data-state": item.decision.state }, h("div", { className: "card-title", text: "Plan" }), markdownBlock(item.plan, "markdown", item.id));
  switch (item.decision.state) {
    case "pending": {
      const modeName = `mode-${item.id}`;
      const choice = (value: "acceptEdits" | "default", label: string, checked: boolean): HTMLLabelElement => {
        const radio = h("input");
        radio.type = "radio";
        radio.name = modeName;
        radio.value = value;
        radio.checked = checked;
        return h("label", { className: "choice" }, radio, ` ${label}`);
      };
      const feedback = feedbackBox("What should change? (sent with Reject)…");
      const selectedMode = (): "acceptEdits" | "default" =>
        card.querySelector<HTMLInputElement>(`input[name="${modeName}"]:checked`)?.value === "default" ? "default" : "acceptEdits";
      card.append(
        answerBar(
          h("div", { className: "choices" }, "Then: ", choice("acceptEdits", MODE_WORDS.acceptEdits, true), choice("default", MODE_WORDS.default, false)),
          feedback,
          h(
            "div",
            { className: "actions" },
            button("Approve", "primary approve", () => vscode.postMessage({ type: "planDecision", id: item.id, approved: true, mode: selectedMode() })),
            button("Reject", "secondary reject", () => {
              const text = feedback.value.trim();
              vscode.postMessage({ type: "planDecision", id: item.id, approved: false, ...(text !== "" ? { feedback: text } : {}) });
            }),
          ),
        ),
      );
      break;
    }
    case "approved":
      card.append(decided("✓ Approved", "ok"));
      break;
    case "rejected":
      card.append(decided(`✗ Rejected${item.decision.feedback ? `: ${item.decision.feedback}` : ""}`, "bad"));
      break;
    case "cancelled":
      card.append(decided("Dismissed (the turn ended)", "muted"));
      break;
  }
  return card;
}

const DECISION_TEXT = { allow: "✓ Allowed", allowSession: "✓ Allowed for this session", allowAlways: "✓ Always allowed (a rule in .tiller/settings.local.json)", deny: "✗ Denied" } as const;

function renderConfirm(confirm: Confirmation, extraClass = ""): HTMLElement {
  const preview = confirm.preview;
  const state = confirm.decision.state;
  if (extraClass !== "" && state !== "pending") {
    // Answered on its row: one line; the row already names the command or the file.
    const feedback = "feedback" in confirm.decision && confirm.decision.feedback ? `: ${confirm.decision.feedback}` : "";
    const text = state === "cancelled" ? "Dismissed (the turn ended)" : `${DECISION_TEXT[state]}${feedback}`;
    return h("div", { className: `card confirm ${preview.kind}${extraClass} decided`, "data-state": state }, decided(text, state === "deny" ? "bad" : state === "cancelled" ? "muted" : "ok"));
  }
  const pending = confirm.decision.state === "pending";
  const body: Child[] =
    preview.kind === "diff"
      ? [h("div", { className: "card-title", text: `Edit ${preview.path}?` }), pending ? h("div", { className: "muted", text: "The proposed change is open in a diff editor. Closing it does not approve it." }) : null]
      : preview.kind === "command"
        ? [h("div", { className: "card-title", text: "Run this command?" }), h("pre", { className: "command", text: `$ ${preview.command}` }), preview.cwd ? h("div", { className: "muted", text: `in ${preview.cwd}` }) : null, segmentList(preview.segments)]
        : [h("div", { className: "card-title", text: `Allow ${confirm.name}?` }), preview.text !== "" ? h("pre", { text: preview.text }) : null];
  const card = h("div", { className: `card confirm ${preview.kind}${extraClass}`, "data-state": confirm.decision.state }, ...body);
  const decision = confirm.decision;
  if (decision.state === "pending") {
    const feedback = feedbackBox("Why not? (optional, sent with Deny)…");
    const answer = (choice: ToolDecision): void => {
      const text = feedback.value.trim();
      vscode.postMessage({ type: "toolDecision", id: confirm.id, decision: choice, ...(choice === "deny" && text !== "" ? { feedback: text } : {}) });
    };
    card.append(
      answerBar(
        feedback,
        h(
          "div",
          { className: "actions" },
          button("Allow", "primary allow", () => answer("allow")),
          button("Allow for session", "secondary allow-session", () => answer("allowSession")),
          // A command's parts, exactly as split above, kept as rules for next time.
          preview.kind === "command" ? button("Always allow", "secondary allow-always", () => answer("allowAlways")) : null,
          button("Deny", "secondary deny", () => answer("deny")),
        ),
      ),
    );
  } else if (decision.state === "cancelled") {
    card.append(decided("Dismissed (the turn ended)", "muted"));
  } else {
    const note = "feedback" in decision && decision.feedback ? `: ${decision.feedback}` : "";
    card.append(decided(`${DECISION_TEXT[decision.state]}${note}`, decision.state === "deny" ? "bad" : "ok"));
  }
  return card;
}

function renderCheckpoint(item: Extract<ChatItem, { kind: "checkpoint" }>): HTMLElement {
  const card = h("div", { className: "card checkpoint", "data-state": item.decision.state }, h("div", { className: "card-title", text: `${item.toolsUsed} tool calls so far. Keep going?` }));
  if (item.decision.state === "pending") {
    card.append(
      answerBar(
        h(
          "div",
          { className: "actions" },
          button("Continue", "primary", () => vscode.postMessage({ type: "checkpointDecision", id: item.id, continue: true })),
          button("Stop", "secondary", () => vscode.postMessage({ type: "checkpointDecision", id: item.id, continue: false })),
        ),
      ),
    );
  } else {
    const text = { continue: "✓ Continued", stop: "✗ Stopped", cancelled: "Dismissed (the turn ended)" }[item.decision.state];
    card.append(decided(text, item.decision.state === "continue" ? "ok" : "muted"));
  }
  return card;
}

// --- tool rows ---------------------------------------------------------------------------

function outputView(item: Extract<ChatItem, { kind: "tool" }>): HTMLElement {
  const running = item.status === "running";
  const text = item.output !== "" ? item.output.replace(/\n$/, "") : running ? "" : "(no output)";
  const lines = text.split("\n");
  const key = `${item.id}:output`;
  const wrap = h("div", { className: "output-wrap" });
  if (lines.length > OUTPUT_LINES && !expanded.has(key)) {
    // While it runs, the newest lines matter; once done, the first ones.
    const shown = running ? lines.slice(-OUTPUT_LINES) : lines.slice(0, OUTPUT_LINES);
    wrap.append(
      h("pre", { className: "output", text: shown.join("\n") }),
      button(`Show all ${lines.length} lines`, "expand", () => {
        expanded.add(key);
        rerender(item.id);
      }),
    );
  } else {
    wrap.append(h("pre", { className: "output", text: text !== "" ? text : "waiting for output…" }));
    if (lines.length > OUTPUT_LINES) {
      wrap.append(
        button("Show less", "expand", () => {
          expanded.delete(key);
          rerender(item.id);
        }),
      );
    }
  }
  return wrap;
}

/** How the rules split a command: each part, and what allows it or why it is asked. */
function segmentList(segments: CommandSegment[] | undefined): HTMLElement | null {
  if (segments === undefined || segments.length < 1) return null;
  const words: Record<CommandSegment["decision"], string> = { allow: "allowed", ask: "asks", deny: "denied", mode: "asks (no rule)" };
  return h(
    "ul",
    { className: "segments" },
    ...segments.map((segment) =>
      h(
        "li",
        { className: `segment ${segment.decision}` },
        h("code", { text: segment.text }),
        " ",
        h("span", { className: "muted", text: segment.rule !== undefined ? `${words[segment.decision]} · ${segment.rule}` : words[segment.decision] }),
      ),
    ),
  );
}

function renderTool(item: Extract<ChatItem, { kind: "tool" }>): HTMLElement {
  const awaiting = item.confirm?.decision.state === "pending";
  const running = item.status === "running" && !awaiting;
  // The model stamps `startedAt` once the call may run: waiting for an answer is not running.
  const timed = running && item.startedAt !== undefined;
  if (!timed) runningSince.delete(item.toolUseId);
  else if (!runningSince.has(item.toolUseId)) runningSince.set(item.toolUseId, Date.now());
  const open = awaiting ? false : (toolOpen.get(item.toolUseId) ?? running);
  const time = awaiting
    ? h("span", { className: "duration waiting", text: "waiting for you" })
    : timed
      ? h("span", { className: "duration elapsed", "data-since": String(runningSince.get(item.toolUseId) ?? Date.now()), text: formatDuration(Date.now() - (runningSince.get(item.toolUseId) ?? Date.now())) })
      : item.durationMs !== undefined
        ? h("span", { className: "duration", text: formatDuration(item.durationMs) })
        : null;
  const diffStat = diffButton(item);
  const head = h(
    "div",
    { className: "tool-head", title: open ? "Hide the output" : "Show the output" },
    h("span", { className: "chevron", text: open ? "▾" : "▸" }),
    h("span", { className: `mark ${item.status}`, text: toolMark(item.status) }),
    h("span", { className: "tool-name", text: item.name }),
    item.summary !== "" ? summaryView(item) : null,
    item.decidedBy !== undefined ? h("span", { className: "decided-by muted", text: item.decidedBy, title: item.decidedBy }) : null,
    diffStat,
    time,
  );
  head.setAttribute("role", "button");
  head.tabIndex = 0;
  const toggle = (): void => {
    toolOpen.set(item.toolUseId, !open);
    rerender(item.id);
  };
  head.addEventListener("click", toggle);
  head.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      toggle();
    }
  });
  const row = h("div", { className: `tool ${item.status}${open ? " open" : ""}`, "data-tool-use-id": item.toolUseId }, head);
  if (item.confirm !== undefined) {
    row.append(renderConfirm(item.confirm, " in-row"));
  }
  if (item.agent !== undefined) {
    row.append(renderAgent(item.agent, item.id));
  }
  if (open) {
    row.append(outputView(item));
  }
  return row;
}

/** `+2 −1` (or `diff` for an edit without its stat) opening the before/after; null for a row
 *  that changed no file. */
function diffButton(item: Extract<ChatItem, { kind: "tool" }>): HTMLElement | null {
  const openDiff = (): void => vscode.postMessage({ type: "openDiff", toolUseId: item.toolUseId });
  if (item.diff === undefined) {
    const canDiff = EDIT_TOOLS.has(item.name) && item.status === "ok";
    return canDiff ? button("diff", "diffstat plain", openDiff, "Open the before/after diff") : null;
  }
  const diffStat = button("", "diffstat", openDiff, "Open the before/after diff");
  diffStat.replaceChildren(h("span", { className: "added", text: `+${item.diff.added}` }), " ", h("span", { className: "removed", text: `−${item.diff.removed}` }));
  diffStat.setAttribute("aria-label", `${formatDiffStat(item.diff)}: open the diff`);
  return diffStat;
}

/** The row's summary; for a file tool, a link that opens the file (at the line, when known). */
function summaryView(item: Extract<ChatItem, { kind: "tool" }>): HTMLElement {
  const file = item.file;
  if (file === undefined) return h("code", { className: "tool-summary", text: item.summary });
  const shown = file.line !== undefined ? `${file.path}:${file.line}` : file.path;
  const link = h("a", { className: "tool-summary file-link", text: shown, title: `Open ${shown}` });
  link.href = "#";
  link.addEventListener("click", (event) => {
    event.preventDefault();
    event.stopPropagation();
    vscode.postMessage(file.line !== undefined ? { type: "openFile", path: file.path, line: file.line } : { type: "openFile", path: file.path });
  });
  return link;
}

// --- subagents: nested under the task row that started them ----------------------------------

const agentOpen = new Map<string, boolean>();

function agentMark(agent: AgentView): string {
  switch (agent.status) {
    case "running":
      return toolMark("running");
    case "completed":
      return toolMark("ok");
    case "interrupted":
      return toolMark("interrupted");
    default:
      return toolMark("error");
  }
}

/** A child session as a collapsible row: its kind, its current tool, its time, its tokens, a
 *  stop button that interrupts it alone; open, its calls one per line. */
function renderAgent(agent: AgentView, itemId: string): HTMLElement {
  const running = agent.status === "running";
  const open = agentOpen.get(agent.sessionId) ?? running;
  const now = currentTool(agent);
  const time =
    running && agent.startedAt !== undefined
      ? h("span", { className: "duration elapsed", "data-since": String(agent.startedAt), text: formatDuration(Date.now() - agent.startedAt) })
      : agent.durationMs !== undefined
        ? h("span", { className: "duration", text: formatDuration(agent.durationMs) })
        : null;
  const stop =
    running && agent.turnId !== undefined
      ? button("Stop", "agent-stop", () => vscode.postMessage({ type: "interrupt", turnId: agent.turnId }), `Interrupt the ${agent.name} agent alone`)
      : null;
  const head = h(
    "div",
    { className: "agent-head", title: open ? "Hide its calls" : "Show its calls" },
    h("span", { className: "chevron", text: open ? "▾" : "▸" }),
    h("span", { className: `mark ${agent.status}`, text: agentMark(agent) }),
    h("span", { className: "agent-name", text: `${agent.name} agent` }),
    h("span", { className: "agent-description", text: agent.description }),
    now !== undefined ? h("code", { className: "agent-current", text: now }) : null,
    time,
    agent.tokens !== undefined ? h("span", { className: "agent-tokens", text: `${agent.tokens} tokens` }) : null,
    stop,
  );
  head.setAttribute("role", "button");
  head.tabIndex = 0;
  const toggle = (event: Event): void => {
    if (event.target instanceof HTMLButtonElement) return;
    agentOpen.set(agent.sessionId, !open);
    rerender(itemId);
  };
  head.addEventListener("click", toggle);
  const box = h("div", { className: `agent ${agent.status}${open ? " open" : ""}`, "data-agent-session-id": agent.sessionId }, head);
  if (open) {
    const calls = agent.calls.map((call) =>
      h(
        "div",
        { className: `agent-call ${call.status}` },
        h("span", { className: `mark ${call.status}`, text: toolMark(call.status) }),
        h("span", { className: "tool-name", text: call.name }),
        call.summary !== "" ? h("code", { className: "tool-summary", text: call.summary }) : null,
        call.durationMs !== undefined ? h("span", { className: "duration", text: formatDuration(call.durationMs) }) : null,
      ),
    );
    box.append(h("div", { className: "agent-calls" }, ...(calls.length > 0 ? calls : [h("div", { className: "agent-call", text: "starting…" })])));
  }
  return box;
}

// --- turn ends, welcome ------------------------------------------------------------------

function renderTurnEnd(item: Extract<ChatItem, { kind: "turnEnd" }>): HTMLElement {
  const trail = item.trail.length > 0 ? h("div", { className: "trail", text: `was working on: ${item.trail.map((t) => `${t.name} ${toolMark(t.status)}`).join(" → ")}` }) : null;
  const usage = item.usage !== undefined ? `${item.usage.inputTokens + item.usage.cacheReadTokens + item.usage.cacheWriteTokens} tokens in, ${item.usage.outputTokens} out${item.usage.costUsd !== null ? `, $${item.usage.costUsd.toFixed(4)}` : ""}` : "";
  switch (item.outcome) {
    case "completed":
      return h("div", { className: "turn-end completed", title: usage !== "" ? `Turn completed: ${usage}` : "Turn completed" });
    case "interrupted": {
      const text =
        item.cause === "server_stopped"
          ? "■ Interrupted: the Tiller server stopped during this turn"
          : item.cause === "keyword"
            ? "■ Interrupted (you said stop)"
            : "■ Interrupted";
      return h("div", { className: "turn-end interrupted", "data-cause": item.cause ?? "user" }, h("span", { text }), trail);
    }
    case "stopped":
      return h("div", { className: "turn-end stopped" }, h("span", { text: "■ Stopped at the checkpoint" }), trail);
    case "refused": {
      const refusal = item.refusal;
      return h(
        "div",
        { className: "turn-end refused" },
        h("div", { className: "error-title", text: `⊘ The model declined to answer${refusal?.category ? ` (${refusal.category})` : ""}` }),
        refusal?.explanation ? h("div", { className: "hint", text: refusal.explanation }) : null,
        h("div", { className: "hint", text: "The prompt was not kept; rephrase it to go on." }),
      );
    }
    case "failed": {
      const error = item.error;
      const box = h(
        "div",
        { className: "turn-end failed", "data-kind": error?.kind ?? "internal" },
        h("div", { className: "error-title", text: `Failed (${error?.kind ?? "internal"}): ${error?.message ?? "unknown error"}` }),
      );
      if (item.hint !== undefined) {
        const command = item.hint.command;
        box.append(h("div", { className: "hint" }, item.hint.text, " ", command ? button(command.label, "secondary hint-action", () => vscode.postMessage({ type: "command", command: command.id })) : null));
      }
      box.append(trail ?? "");
      return box;
    }
  }
}

function renderWelcome(model: ChatView): HTMLElement {
  const state = model.state;
  const demo = model.provider === "demo";
  const examples = demo
    ? ["Write a tiny Python program and run it", "Plan a small change before making it", "Show me what the chat can render"]
    : ["Explain what this project does and how it is laid out", "Find a failing test and fix it", "Add a short “How to run” section to the README"];
  const prompts = h("div", { className: "examples" }, ...examples.map((text) => button(text, "example", () => vscode.postMessage({ type: "prompt", text }))));
  const untrusted = untrustedWelcome(state?.workspaceTrust);
  return h(
    "section",
    { className: "welcome" },
    h("h2", { text: "Tiller" }),
    h("p", { text: "A coding agent you steer: it reads, edits and runs code in this workspace, shows every step, and asks before it changes anything unless you allow it." }),
    untrusted !== undefined
      ? h("p", { className: "untrusted" }, `${untrusted} `, button("Manage Workspace Trust", "secondary hint-action manage-trust", () => vscode.postMessage({ type: "command", command: MANAGE_TRUST_COMMAND })))
      : null,
    h(
      "ul",
      { className: "facts" },
      h("li", {}, "Mode: ", h("strong", { text: state !== null ? MODE_WORDS[state.mode] : "…" }), " (Shift+Tab to change)"),
      h("li", {}, "Model: ", h("strong", { text: state?.model ?? "…" })),
      demo
        ? h("li", { className: "demo" }, "Offline demo: no API key is set, so a scripted model plays a few scenes. ", button("Set API Key…", "secondary hint-action", () => vscode.postMessage({ type: "command", command: "tiller.setApiKey" })))
        : model.provider === "scripted"
          ? h("li", { text: "Scripted model (tiller.demoScript)." })
          : h("li", { text: "Talks to the Anthropic API." }),
    ),
    h("div", { className: "muted", text: "Try:" }),
    prompts,
  );
}

function renderItem(item: ChatItem): HTMLElement {
  switch (item.kind) {
    case "user": {
      const message = h("div", { className: "msg user", text: item.text });
      if (item.attachments !== undefined) message.append(attachmentsView(item.attachments));
      const turnId = item.turnId;
      if (turnId !== undefined && turnId !== "" && item.local !== true) {
        message.append(button("↺ Rewind to here", "rewind", () => vscode.postMessage({ type: "rewind", turnId }), "Put files and conversation back to before this prompt (you see what changes first)"));
      }
      return message;
    }
    case "assistant":
      return markdownBlock(item.text, `msg assistant markdown${item.streaming ? " streaming" : ""}`, item.id);
    case "thinking":
      return h("details", { className: "thinking" }, h("summary", { text: item.streaming ? "Thinking…" : "Thought" }), h("pre", { text: item.text }));
    case "tool":
      return renderTool(item);
    case "notice": {
      const notice = h("div", { className: `notice ${item.level}${item.local === true ? " local" : ""}`, text: item.text });
      if (item.repeats !== undefined && item.repeats > 1) {
        notice.append(h("span", { className: "repeats", text: ` (×${item.repeats})`, title: `Shown once for ${item.repeats} alike notices` }));
      }
      const undoId = item.undoId;
      if (undoId !== undefined) {
        notice.append(" ", button("Undo rewind", "secondary undo-rewind", () => vscode.postMessage({ type: "undoRewind", undoId })));
      }
      return notice;
    }
    case "plan":
      return renderPlan(item);
    case "confirm":
      return renderConfirm({ id: item.id, name: item.name, preview: item.preview, decision: item.decision });
    case "checkpoint":
      return renderCheckpoint(item);
    case "turnEnd":
      return renderTurnEnd(item);
  }
}

/** Set when the user sends: the log follows the answer even if they had scrolled up. */
let followAnswer = false;

function pendingQuestion(item: ChatItem): boolean {
  return (
    ((item.kind === "plan" || item.kind === "confirm" || item.kind === "checkpoint") && item.decision.state === "pending") ||
    (item.kind === "tool" && item.confirm?.decision.state === "pending")
  );
}

/** The welcome view, when shown, is the log's first child: items come after it. */
function renderLog(items: ChatItem[]): void {
  const nearBottom = followAnswer || log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  let question: HTMLElement | undefined;
  const keep = new Set(items.map((item) => item.id));
  for (const [id, entry] of rendered) {
    if (!keep.has(id)) {
      entry.element.remove();
      rendered.delete(id);
    }
  }
  const offset = log.firstElementChild?.classList.contains("welcome") === true ? 1 : 0;
  items.forEach((item, position) => {
    const index = position + offset;
    let entry = rendered.get(item.id);
    // A patch replaces only the items that changed: the others are the same objects.
    if (entry === undefined || entry.item !== item || entry.stale) {
      const element = renderItem(item);
      element.dataset.id = item.id;
      if (item.faded === true) {
        element.classList.add("faded");
        element.title = "Rewound: no longer part of the conversation";
      }
      const open = entry?.element instanceof HTMLDetailsElement && entry.element.open;
      if (open && element instanceof HTMLDetailsElement) {
        element.open = true;
      }
      if (pendingQuestion(item) && (entry === undefined || entry.stale || !pendingQuestion(entry.item))) {
        question = element;
      }
      entry?.element.replaceWith(element);
      entry = { item, element, stale: false };
      rendered.set(item.id, entry);
    }
    if (log.children[index] !== entry.element) {
      log.insertBefore(entry.element, log.children[index] ?? null);
    }
  });
  if (question !== undefined) {
    // A question waits for the user: bring it into view wherever they had scrolled. One taller
    // than the chat shows from its top, its answer bar held at the bottom (sticky).
    question.scrollIntoView({ block: question.offsetHeight > log.clientHeight ? "start" : "nearest" });
  } else if (nearBottom) {
    log.scrollTop = log.scrollHeight;
  }
}

// Scrolling up by hand stops following the answer.
log.addEventListener("wheel", (event) => {
  if (event.deltaY < 0) followAnswer = false;
});

function renderQueue(prompts: string[]): void {
  queue.replaceChildren();
  queue.hidden = prompts.length === 0;
  if (prompts.length === 0) return;
  const list = h("ol", {});
  for (const prompt of prompts) {
    list.append(h("li", { text: prompt }));
  }
  queue.append(h("div", { className: "queue-title" }, `Queued (${prompts.length})`, button("Clear queue", "secondary clear-queue", () => vscode.postMessage({ type: "clearQueue" }))), list);
}

/**
 * The welcome view heads a chat with no conversation yet: setting notices (a mode cycled,
 * thinking toggled) show under it and do not end it. Redrawn only when what it says changes.
 */
function placeWelcome(model: ChatView): void {
  const shown = log.querySelector<HTMLElement>(":scope > .welcome");
  const state = model.state;
  if (model.connection !== "running" || state === null || !showsWelcome(model.items)) {
    shown?.remove();
    return;
  }
  const key = [state.mode, state.model, model.provider ?? "", state.workspaceTrust?.trusted ?? ""].join("|");
  if (shown?.dataset.key === key) return;
  const welcome = renderWelcome(model);
  welcome.dataset.key = key;
  if (shown !== null) shown.replaceWith(welcome);
  else log.prepend(welcome);
}

function render(model: ChatView): void {
  current = model;
  placeWelcome(model);
  renderLog(model.items);
  const state = model.state;
  renderQueue(state?.queue ?? []);
  const busy = state?.busy ?? false;
  stop.hidden = !busy;
  document.body.dataset.busy = String(busy);
  document.body.dataset.connection = model.connection;
  document.body.dataset.session = model.sessionId ?? "";
  document.body.dataset.mode = state?.mode ?? "";
  // As the status bar: while the offline demo plays no model answers, so it stands in the model's place.
  modeLabel.textContent =
    model.connection === "running" && state !== null ? `${MODE_WORDS[state.mode]} · ${model.provider === "demo" ? "offline demo" : state.model}` : model.connection === "starting" ? "starting the server…" : "server stopped";
  modeLabel.dataset.mode = state?.mode ?? "";
  usageLabel.textContent = model.connection === "running" ? usageText(state) : "";
}

/** Ticks the elapsed time of running tools without re-rendering them. */
setInterval(() => {
  document.querySelectorAll<HTMLElement>(".duration.elapsed[data-since]").forEach((element) => {
    element.textContent = formatDuration(Date.now() - Number(element.dataset.since));
  });
}, 500);

function send(steer = false): void {
  const text = input.value.trim();
  if (text === "") return;
  // Ctrl/Cmd+Enter while the agent works steers the running turn (it reads the text at its
  // next step); Enter queues the prompt for when the turn ends.
  vscode.postMessage(steer && (current?.state?.busy ?? false) ? { type: "steer", text } : { type: "prompt", text, ...attachments.take() });
  input.value = "";
  renderSlash();
  followAnswer = true;
}

function interrupt(): void {
  const turnId = current?.state?.turnId;
  vscode.postMessage(turnId ? { type: "interrupt", turnId } : { type: "interrupt" });
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});

stop.addEventListener("click", interrupt);

// Slash commands: typing "/" asks for the list (built-in and custom); the matching ones are
// shown above the input, and Tab completes the first match.
let slashCommands: CommandListItem[] = [];

function renderSlash(): void {
  const matches = slashMatches(slashCommands, input.value);
  slashList.replaceChildren(
    ...matches.slice(0, 8).map((command) => {
      const item = h("li");
      item.textContent = slashHint(command);
      return item;
    }),
  );
  slashList.hidden = matches.length === 0;
}

input.addEventListener("input", () => {
  if (input.value === "/") vscode.postMessage({ type: "listCommands" });
  renderSlash();
});

input.addEventListener("keydown", (event) => {
  const first = slashMatches(slashCommands, input.value)[0];
  if (event.key === "Tab" && !event.shiftKey && first !== undefined) {
    event.preventDefault();
    input.value = `/${first.name} `;
    renderSlash();
    return;
  }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send(event.ctrlKey || event.metaKey);
  }
});

// Shift+Tab and Escape are handled here, not forwarded to the workbench, so they act once.
document.addEventListener("keydown", (event) => {
  const busy = current?.state?.busy ?? false;
  if (event.key === "Tab" && event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
    event.preventDefault();
    event.stopPropagation();
    vscode.postMessage({ type: "cycleMode" });
  } else if (event.key === "Escape" && busy) {
    event.preventDefault();
    event.stopPropagation();
    interrupt();
  }
});

window.addEventListener("focus", () => vscode.postMessage({ type: "focus", focused: true }));
window.addEventListener("blur", () => vscode.postMessage({ type: "focus", focused: false }));

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case "patch":
      render(applyPatch(current, message.patch));
      break;
    case "focusInput":
      input.focus();
      break;
    case "mentions":
      attachments.showMentions(message.requestId, message.items);
      break;
    case "activeEditor":
      attachments.setActiveEditor(message.editor);
      break;
    case "commands":
      slashCommands = message.commands;
      renderSlash();
      break;
  }
});

vscode.postMessage({ type: "ready" });
