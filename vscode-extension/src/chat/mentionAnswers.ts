// The @-picker's answers to one query: the files and folders at once, then, when the workspace's
// symbol providers answer, the same entries with the symbols after them. A language server still
// analysing the workspace may take half a minute; the files must not wait for it. Pure (no
// vscode import): the sources are mentions.ts's, the answers go to the webview that asked.
import type { Mention } from "./attachments";
import type { ToWebview } from "./messages";

/** Where the picker's entries come from (mentions.ts's `Mentions`). */
export interface MentionSource {
  /** The entries at hand: the specials, then the matching files and folders. */
  query(query: string): Promise<Mention[]>;
  /** `entries` with the matching symbols after them; undefined when there are none to add. */
  withSymbols(query: string, entries: readonly Mention[]): Promise<Mention[] | undefined>;
}

export type MentionsAnswer = Extract<ToWebview, { type: "mentions" }>;

/** Answers query `requestId`: the files first, then (when there are any) the files and symbols. */
export async function answerMentionQuery(source: MentionSource, query: string, requestId: number, post: (answer: MentionsAnswer) => void): Promise<void> {
  const items = await source.query(query);
  post({ type: "mentions", requestId, items });
  const more = await source.withSymbols(query, items);
  if (more !== undefined) post({ type: "mentions", requestId, items: more });
}
