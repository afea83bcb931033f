// The server's questions to the user: plan approval, tool confirmation (with a diff editor for
// edits), checkpoints. Each is a card in the chat; only an explicit answer on it approves.
// The server posts each question as an event before it asks, and that event draws the card:
// the request adopts it (an older server that posts none gets a card drawn here). Cancellation
// ($/cancelRequest) dismisses the card, and so does a question withdrawn without one: its turn
// ended, the server decided it (`…Decided`), or the server went away (then its diff tab closes
// too). Anything unexpected answers "no".
import * as vscode from "vscode";
import type { CancellationToken } from "vscode-languageclient/node";
import type { CardDecision, ChatProvider } from "./chat/provider";
import {
  checkpointDecision,
  confirmDecision,
  decideCheckpoint,
  decideConfirm,
  decidePlan,
  openCheckpointCard,
  openConfirmCard,
  openPlanCard,
  withdraws,
  type Asked,
} from "./chat/cards";
import {
  errorMessage,
  type ApprovePlanResult,
  type CheckpointResult,
  type ConfirmToolParams,
  type ConfirmToolResult,
} from "./protocol";
import type { TillerServer } from "./server";
import type { DiffContents } from "./diffView";

interface Waiter extends Asked {
  decide(decision: CardDecision): void;
  withdraw(): void;
}

export class Approvals implements vscode.Disposable {
  private counter = 0;
  private readonly waiting = new Map<string, Waiter>();
  /** False once the server went away: a question asked before (its diff still opening) is over. */
  private connected = true;
  private readonly disposables: vscode.Disposable[];

  constructor(
    server: TillerServer,
    private readonly chat: ChatProvider,
    private readonly log: vscode.LogOutputChannel,
    private readonly diffs: DiffContents,
  ) {
    this.disposables = [
      chat.onDecision((decision) => this.waiting.get(decision.id)?.decide(decision)),
      // A server that went away answers nothing more: its questions are over.
      server.onConnection((connection) => {
        this.connected = connection === "running";
        if (!this.connected) this.withdrawWhere(() => true);
      }),
      server.onEvent((event) => this.withdrawWhere((asked) => withdraws(event, asked))),
    ];
    server.handleRequest("tiller/approvePlan", (params, token) =>
      this.failClosed(this.approvePlan(params.turnId, params.plan, token), { approved: false }),
    );
    server.handleRequest("tiller/confirmTool", (params, token) =>
      this.failClosed(this.confirmTool(params, token), { decision: "deny" }),
    );
    server.handleRequest("tiller/checkpoint", (params, token) =>
      this.failClosed(this.checkpoint(params.turnId, params.toolsUsed, token), { continue: false }),
    );
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  private withdrawWhere(match: (asked: Asked) => boolean): void {
    for (const waiter of [...this.waiting.values()]) {
      if (match(waiter)) waiter.withdraw();
    }
  }

  private async failClosed<T>(answer: Promise<T>, refusal: T): Promise<T> {
    try {
      return await answer;
    } catch (error) {
      this.log.error(`Answering the server failed, answering no: ${errorMessage(error)}`);
      return refusal;
    }
  }

  /** Waits for the card's answer; undefined when the server cancelled or withdrew the question. */
  private answer<T>(id: string, asked: Asked, token: CancellationToken, pick: (decision: CardDecision) => T | undefined): Promise<T | undefined> {
    return new Promise((resolve) => {
      const done = (value: T | undefined): void => {
        this.waiting.delete(id);
        cancellation.dispose();
        resolve(value);
      };
      const cancellation = token.onCancellationRequested(() => done(undefined));
      this.waiting.set(id, {
        ...asked,
        decide: (decision) => {
          const value = pick(decision);
          if (value !== undefined) {
            done(value);
          }
        },
        withdraw: () => done(undefined),
      });
      if (token.isCancellationRequested || !this.connected) {
        done(undefined);
      }
    });
  }

  private nextId(kind: string): string {
    this.counter += 1;
    return `${kind}-${this.counter}`;
  }

  private async approvePlan(turnId: string, plan: string, token: CancellationToken): Promise<ApprovePlanResult> {
    const id = this.chat.open((model) => openPlanCard(model, this.nextId("plan"), turnId, plan));
    this.chat.reveal();
    const result = await this.answer<ApprovePlanResult>(id, { kind: "plan", turnId }, token, (decision) =>
      decision.type !== "planDecision"
        ? undefined
        : decision.approved
          ? { approved: true, mode: decision.mode ?? "acceptEdits" }
          : { approved: false, ...(decision.feedback ? { feedback: decision.feedback } : {}) },
    );
    this.chat.update((model) => decidePlan(model, id, result ?? null));
    return result ?? { approved: false };
  }

  private async confirmTool(params: ConfirmToolParams, token: CancellationToken): Promise<ConfirmToolResult> {
    const id = this.chat.open((model) => openConfirmCard(model, this.nextId("confirm"), params));
    this.chat.reveal();
    const preview = params.preview;
    if (preview.kind === "diff") {
      this.chat.rememberEdit(params.toolUseId, { path: preview.path, before: preview.before, after: preview.after });
    }
    const closeDiff = preview.kind === "diff" ? await this.diffs.show(id, preview.path, preview.before, preview.after, "proposed edit — Tiller") : undefined;
    try {
      const result = await this.answer<ConfirmToolResult>(id, { kind: "confirm", turnId: params.turnId, toolUseId: params.toolUseId }, token, (decision) =>
        decision.type !== "toolDecision"
          ? undefined
          : { decision: decision.decision, ...(decision.decision === "deny" && decision.feedback ? { feedback: decision.feedback } : {}) },
      );
      this.chat.update((model) => decideConfirm(model, id, confirmDecision(result), Date.now()));
      return result ?? { decision: "deny" };
    } finally {
      await closeDiff?.();
    }
  }

  private async checkpoint(turnId: string, toolsUsed: number, token: CancellationToken): Promise<CheckpointResult> {
    const id = this.chat.open((model) => openCheckpointCard(model, this.nextId("checkpoint"), turnId, toolsUsed));
    this.chat.reveal();
    const result = await this.answer<CheckpointResult>(id, { kind: "checkpoint", turnId }, token, (decision) =>
      decision.type === "checkpointDecision" ? { continue: decision.continue } : undefined,
    );
    this.chat.update((model) => decideCheckpoint(model, id, checkpointDecision(result)));
    return result ?? { continue: false };
  }
}
