// The chat webview: renders the ChatModel the extension posts, and posts back what the user
// does. It keeps no agent state of its own.
import type { FromWebview, ToWebview } from "../chat/messages";
import { formatTrail, toolMark, type ChatItem, type ChatModel } from "../chat/model";
import type { Mode } from "../protocol";
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
const modeLabel = document.getElementById("mode") as HTMLElement;
const stop = document.getElementById("stop") as HTMLButtonElement;

const MODE_NAMES: Record<Mode, string> = { default: "ask before edits", acceptEdits: "accept edits", plan: "plan" };

let current: ChatModel | null = null;
/** Rendered items by id, with the JSON they were rendered from. */
const rendered = new Map<string, { json: string; element: HTMLElement }>();

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

function button(label: string, className: string, onClick: () => void): HTMLButtonElement {
  const element = h("button", { className, text: label });
  element.type = "button";
  element.addEventListener("click", onClick);
  return element;
}

function markdownBlock(text: string, className: string): HTMLElement {
  const element = h("div", { className });
  element.innerHTML = renderMarkdown(text);
  return element;
}

function feedbackBox(placeholder: string): HTMLTextAreaElement {
  const box = h("textarea", { className: "feedback" });
  box.rows = 2;
  box.placeholder = placeholder;
  return box;
}

function decided(text: string, className: string): HTMLElement {
  return h("div", { className: `decision ${className}`, text });
}

function renderPlan(item: Extract<ChatItem, { kind: "plan" }>): HTMLElement {
  const card = h("div", { className: "card plan", "data-state": item.decision.state }, h("div", { className: "card-title", text: "Plan" }), markdownBlock(item.plan, "markdown"));
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
        h("div", { className: "choices" }, "Then: ", choice("acceptEdits", "accept edits", true), choice("default", "ask before edits", false)),
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
      );
      break;
    }
    case "approved":
      card.append(decided(`✓ Approved${item.decision.mode ? ` — ${MODE_NAMES[item.decision.mode]}` : ""}`, "ok"));
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

const DECISION_TEXT = { allow: "✓ Allowed", allowSession: "✓ Allowed for this session", deny: "✗ Denied" } as const;

function renderConfirm(item: Extract<ChatItem, { kind: "confirm" }>): HTMLElement {
  const preview = item.preview;
  const body: Child[] =
    preview.kind === "diff"
      ? [h("div", { className: "card-title", text: `Edit ${preview.path}?` }), h("div", { className: "muted", text: "The proposed change is open in a diff editor. Closing it does not approve it." })]
      : preview.kind === "command"
        ? [h("div", { className: "card-title", text: "Run this command?" }), h("pre", { className: "command", text: `$ ${preview.command}` }), h("div", { className: "muted", text: `in ${preview.cwd}` })]
        : [h("div", { className: "card-title", text: `Allow ${item.name}?` }), h("pre", { text: preview.text })];
  const card = h("div", { className: `card confirm ${preview.kind}`, "data-state": item.decision.state }, ...body);
  const decision = item.decision;
  if (decision.state === "pending") {
    const feedback = feedbackBox("Why not? (optional, sent with Deny)…");
    const answer = (choice: "allow" | "allowSession" | "deny"): void => {
      const text = feedback.value.trim();
      vscode.postMessage({ type: "toolDecision", id: item.id, decision: choice, ...(choice === "deny" && text !== "" ? { feedback: text } : {}) });
    };
    card.append(
      feedback,
      h(
        "div",
        { className: "actions" },
        button("Allow", "primary allow", () => answer("allow")),
        button("Allow for session", "secondary allow-session", () => answer("allowSession")),
        button("Deny", "secondary deny", () => answer("deny")),
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
  const card = h(
    "div",
    { className: "card checkpoint", "data-state": item.decision.state },
    h("div", { className: "card-title", text: `${item.toolsUsed} tool calls so far. Keep going?` }),
    h("div", { className: "trail", text: formatTrail(item.trail) }),
  );
  if (item.decision.state === "pending") {
    card.append(
      h(
        "div",
        { className: "actions" },
        button("Continue", "primary", () => vscode.postMessage({ type: "checkpointDecision", id: item.id, continue: true })),
        button("Stop", "secondary", () => vscode.postMessage({ type: "checkpointDecision", id: item.id, continue: false })),
      ),
    );
  } else {
    const text = { continue: "✓ Continued", stop: "✗ Stopped", cancelled: "Dismissed (the turn ended)" }[item.decision.state];
    card.append(decided(text, item.decision.state === "continue" ? "ok" : "muted"));
  }
  return card;
}

function renderTurnEnd(item: Extract<ChatItem, { kind: "turnEnd" }>): HTMLElement {
  const trail = item.trail.length > 0 ? h("div", { className: "trail", text: `was working on: ${formatTrail(item.trail)}` }) : null;
  switch (item.outcome) {
    case "completed":
      return h("div", { className: "turn-end completed", title: "Turn completed" });
    case "interrupted":
      return h("div", { className: "turn-end interrupted" }, h("span", { text: "■ Interrupted" }), trail);
    case "stopped":
      return h("div", { className: "turn-end stopped" }, h("span", { text: "■ Stopped at the checkpoint" }), trail);
    case "failed": {
      const error = item.error;
      const box = h(
        "div",
        { className: "turn-end failed", "data-kind": error?.kind ?? "internal" },
        h("div", { className: "error-title", text: `Failed (${error?.kind ?? "internal"}): ${error?.message ?? "unknown error"}` }),
      );
      if (item.hint !== undefined) {
        const command = item.hint.command;
        box.append(
          h("div", { className: "hint" }, item.hint.text, " ", command ? button(command.label, "secondary hint-action", () => vscode.postMessage({ type: "command", command: command.id })) : null),
        );
      }
      box.append(trail ?? "");
      return box;
    }
  }
}

function renderItem(item: ChatItem): HTMLElement {
  switch (item.kind) {
    case "user":
      return h("div", { className: "msg user", text: item.text });
    case "assistant": {
      const element = markdownBlock(item.text, `msg assistant markdown${item.streaming ? " streaming" : ""}`);
      return element;
    }
    case "thinking":
      return h("details", { className: "thinking" }, h("summary", { text: item.streaming ? "Thinking…" : "Thought" }), h("pre", { text: item.text }));
    case "tool": {
      const duration = item.durationMs !== undefined ? h("span", { className: "duration", text: `${(item.durationMs / 1000).toFixed(1)}s` }) : null;
      const summary = h(
        "summary",
        {},
        h("span", { className: `mark ${item.status}`, text: toolMark(item.status) }),
        h("span", { className: "tool-name", text: item.name }),
        item.summary !== "" ? h("code", { className: "tool-summary", text: item.summary }) : null,
        duration,
      );
      return h("details", { className: `tool ${item.status}`, "data-tool-use-id": item.toolUseId }, summary, h("pre", { className: "output", text: item.output !== "" ? item.output : item.status === "running" ? "running…" : "(no output)" }));
    }
    case "notice":
      return h("div", { className: `notice ${item.level}`, text: item.text });
    case "plan":
      return renderPlan(item);
    case "confirm":
      return renderConfirm(item);
    case "checkpoint":
      return renderCheckpoint(item);
    case "turnEnd":
      return renderTurnEnd(item);
  }
}

function renderLog(items: ChatItem[]): void {
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  const keep = new Set(items.map((item) => item.id));
  for (const [id, entry] of rendered) {
    if (!keep.has(id)) {
      entry.element.remove();
      rendered.delete(id);
    }
  }
  items.forEach((item, index) => {
    const json = JSON.stringify(item);
    let entry = rendered.get(item.id);
    if (entry === undefined || entry.json !== json) {
      const element = renderItem(item);
      element.dataset.id = item.id;
      const open = entry?.element instanceof HTMLDetailsElement && entry.element.open;
      if (open && element instanceof HTMLDetailsElement) {
        element.open = true;
      }
      entry?.element.replaceWith(element);
      entry = { json, element };
      rendered.set(item.id, entry);
    }
    if (log.children[index] !== entry.element) {
      log.insertBefore(entry.element, log.children[index] ?? null);
    }
  });
  if (nearBottom) {
    log.scrollTop = log.scrollHeight;
  }
}

function renderQueue(prompts: string[]): void {
  queue.replaceChildren();
  queue.hidden = prompts.length === 0;
  if (prompts.length === 0) return;
  const list = h("ol", {});
  for (const prompt of prompts) {
    list.append(h("li", { text: prompt }));
  }
  queue.append(
    h("div", { className: "queue-title" }, `Queued (${prompts.length})`, button("Clear queue", "secondary clear-queue", () => vscode.postMessage({ type: "clearQueue" }))),
    list,
  );
}

function render(model: ChatModel): void {
  current = model;
  renderLog(model.items);
  const state = model.state;
  renderQueue(state?.queue ?? []);
  const busy = state?.busy ?? false;
  stop.hidden = !busy;
  document.body.dataset.busy = String(busy);
  document.body.dataset.connection = model.connection;
  document.body.dataset.session = model.sessionId ?? "";
  modeLabel.textContent =
    model.connection === "running" && state !== null ? `${MODE_NAMES[state.mode]} · ${state.model}` : model.connection === "starting" ? "starting the server…" : "server stopped";
  modeLabel.dataset.mode = state?.mode ?? "";
}

function send(): void {
  const text = input.value.trim();
  if (text === "") return;
  vscode.postMessage({ type: "prompt", text });
  input.value = "";
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});

stop.addEventListener("click", () => vscode.postMessage({ type: "interrupt" }));

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
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
    vscode.postMessage({ type: "interrupt" });
  }
});

window.addEventListener("focus", () => vscode.postMessage({ type: "focus", focused: true }));
window.addEventListener("blur", () => vscode.postMessage({ type: "focus", focused: false }));

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case "render":
      render(message.model);
      break;
    case "focusInput":
      input.focus();
      break;
  }
});

vscode.postMessage({ type: "ready" });
