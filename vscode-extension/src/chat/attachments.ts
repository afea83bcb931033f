// What the chat input attaches to a prompt: @-mentions picked from a fuzzy list, the active
// editor's file or selection (a chip the user can turn off), pasted or dropped images. Shared by
// the webview and the extension host: pure types and functions only.

/** The special mentions, always offered first. */
export const SPECIAL_MENTIONS = [
  { kind: "selection", label: "selection", detail: "the active editor's selection" },
  { kind: "problems", label: "problems", detail: "the Problems list (errors and warnings)" },
  { kind: "terminal", label: "terminal", detail: "the last terminal command and its output" },
  { kind: "diff", label: "diff", detail: "uncommitted changes (git diff HEAD)" },
] as const;

export type SpecialKind = (typeof SPECIAL_MENTIONS)[number]["kind"];

/** One entry of the picker, and (once picked) a chip: what the host resolves at send time. */
export type Mention =
  | { kind: "file" | "folder"; label: string; path: string; detail?: string }
  | { kind: "symbol"; label: string; path: string; startLine: number; endLine: number; detail?: string }
  | { kind: SpecialKind; label: string; detail?: string };

/** A pasted or dropped image, checked in the webview (type by magic bytes, size). */
export interface PastedImage {
  name: string;
  mediaType: ImageType;
  /** base64, without the data: prefix. */
  data: string;
  /** A small downscaled `data:` URL for chips and the chat (at most THUMBNAIL_MAX chars). */
  thumbnail?: string;
}

/** The active editor as the chip shows it: its file, and the selected lines when any. */
export interface ActiveEditor {
  path: string;
  startLine?: number;
  endLine?: number;
}

export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];
/** The Messages API takes at most 5 MB of base64 per image (its vision docs): 3.75 MB raw. */
export const MAX_IMAGE_BYTES = (5 * 1024 * 1024 * 3) / 4;
export const THUMBNAIL_MAX = 64 * 1024;
export const MAX_IMAGES = 10;

/** The image type `bytes` start with (magic bytes), if one the model takes. */
export function sniffImage(bytes: Uint8Array): ImageType | undefined {
  const starts = (...values: number[]): boolean => values.every((value, index) => bytes[index] === value);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && bytes[8] === 0x57 && bytes[9] === 0x45 && bytes[10] === 0x42 && bytes[11] === 0x50) return "image/webp";
  return undefined;
}

/** Why an image cannot be attached, or undefined when it can. */
export function imageProblem(name: string, bytes: Uint8Array): string | undefined {
  if (sniffImage(bytes) === undefined) return `${name}: not a PNG, JPEG, GIF or WebP image`;
  if (bytes.length > MAX_IMAGE_BYTES) return `${name}: ${formatBytes(bytes.length)}; images up to ${formatBytes(MAX_IMAGE_BYTES)} can be sent`;
  return undefined;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** What a chip reads: `@src/app.ts`, `@main (src/app.ts:3)`, `@selection`. */
export function chipLabel(mention: Mention): string {
  switch (mention.kind) {
    case "symbol":
      return `@${mention.label} (${mention.path}:${mention.startLine})`;
    case "folder":
      return `@${mention.label.replace(/\/?$/, "/")}`;
    default:
      return `@${mention.label}`;
  }
}

/** What the active-editor chip reads: `app.ts` or `app.ts:3-9`. */
export function activeEditorLabel(editor: ActiveEditor): string {
  const name = editor.path.split("/").pop() ?? editor.path;
  if (editor.startLine === undefined) return name;
  return editor.endLine !== undefined && editor.endLine !== editor.startLine ? `${name}:${editor.startLine}-${editor.endLine}` : `${name}:${editor.startLine}`;
}

/**
 * How well `query` matches `candidate` as a fuzzy subsequence (higher is better), or -1 when it
 * does not. Consecutive letters, letters after a separator and matches in the last path segment
 * score more; shorter candidates win ties.
 */
export function fuzzyScore(query: string, candidate: string): number {
  const q = query.toLowerCase();
  const c = candidate.toLowerCase();
  if (q === "") return 1000 - c.length;
  const base = c.lastIndexOf("/") + 1;
  let score = 0;
  let at = 0;
  let previous = -2;
  for (const letter of q) {
    const found = c.indexOf(letter, at);
    if (found === -1) return -1;
    score += 1;
    if (found === previous + 1) score += 5;
    if (found === 0 || "/._-".includes(c[found - 1] ?? "")) score += 4;
    if (found >= base) score += 2;
    previous = found;
    at = found + 1;
  }
  if (c.slice(base).startsWith(q)) score += 10;
  return score * 100 - c.length;
}

/** The `limit` best matches of `query` among `candidates`, best first. */
export function rankMentions<T>(query: string, candidates: readonly T[], text: (item: T) => string, limit: number): T[] {
  return candidates
    .map((item) => ({ item, score: fuzzyScore(query, text(item)) }))
    .filter((entry) => entry.score >= 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map((entry) => entry.item);
}

/** The `@query` being typed at `caret` in `text` (after a space or the start), if any. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const before = text.slice(0, caret);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (match === null) return undefined;
  return { start: caret - (match[2] ?? "").length - 1, query: match[2] ?? "" };
}

/** Shallow checks of a mention that came from the webview (untrusted input). */
export function isMention(value: unknown): value is Mention {
  if (typeof value !== "object" || value === null) return false;
  const item = value as Record<string, unknown>;
  if (typeof item.label !== "string") return false;
  switch (item.kind) {
    case "file":
    case "folder":
      return typeof item.path === "string";
    case "symbol":
      return typeof item.path === "string" && Number.isInteger(item.startLine) && Number.isInteger(item.endLine);
    case "selection":
    case "problems":
    case "terminal":
    case "diff":
      return true;
    default:
      return false;
  }
}

export function isPastedImage(value: unknown): value is PastedImage {
  if (typeof value !== "object" || value === null) return false;
  const item = value as Record<string, unknown>;
  return (
    typeof item.name === "string" &&
    typeof item.data === "string" &&
    (IMAGE_TYPES as readonly unknown[]).includes(item.mediaType) &&
    (item.thumbnail === undefined || (typeof item.thumbnail === "string" && item.thumbnail.length <= THUMBNAIL_MAX))
  );
}
