// Messages between the chat webview and the extension host. Shared by both bundles.
import type { CommandListItem, ToolDecision } from "../protocol";
import type { ActiveEditor, Mention, PastedImage } from "./attachments";
import type { ChatCommand } from "./items";
import type { ChatPatch } from "./patch";

/** `patch`: what changed in the chat since the last one (the whole chat when `reset`). */
export type ToWebview =
  | { type: "patch"; patch: ChatPatch }
  | { type: "focusInput" }
  /** The @-picker's entries for the query `requestId` asked. */
  | { type: "mentions"; requestId: number; items: Mention[] }
  /** The active editor for the input's chip (null: none). */
  | { type: "activeEditor"; editor: ActiveEditor | null }
  | { type: "commands"; commands: CommandListItem[] };

export type FromWebview =
  | { type: "ready" }
  | { type: "focus"; focused: boolean }
  /** `activeEditor`: the chip was on (attach the active file or selection). */
  | { type: "prompt"; text: string; mentions?: Mention[]; images?: PastedImage[]; activeEditor?: boolean }
  | { type: "mentionQuery"; requestId: number; query: string }
  | { type: "openFile"; path: string; line?: number }
  | { type: "listCommands" }
  | { type: "steer"; text: string }
  | { type: "interrupt"; turnId?: string }
  | { type: "openDiff"; toolUseId: string }
  | { type: "copy"; text: string }
  | { type: "rewind"; turnId: string }
  | { type: "undoRewind"; undoId: string }
  | { type: "cycleMode" }
  | { type: "clearQueue" }
  | { type: "command"; command: ChatCommand }
  | {
      type: "planDecision";
      id: string;
      approved: boolean;
      mode?: "acceptEdits" | "default";
      feedback?: string;
    }
  | { type: "toolDecision"; id: string; decision: ToolDecision; feedback?: string }
  | { type: "checkpointDecision"; id: string; continue: boolean };

const FROM_WEBVIEW_TYPES: ReadonlySet<string> = new Set([
  "ready",
  "focus",
  "prompt",
  "mentionQuery",
  "openFile",
  "listCommands",
  "interrupt",
  "openDiff",
  "copy",
  "rewind",
  "steer",
  "undoRewind",
  "cycleMode",
  "clearQueue",
  "command",
  "planDecision",
  "toolDecision",
  "checkpointDecision",
]);

/** Shallow validation at the trust boundary: the webview's messages are untrusted input. */
export function isFromWebview(message: unknown): message is FromWebview {
  return (
    typeof message === "object" &&
    message !== null &&
    "type" in message &&
    typeof (message as { type: unknown }).type === "string" &&
    FROM_WEBVIEW_TYPES.has((message as { type: string }).type)
  );
}
