// How a saved session reads in the History picker. Pure: no vscode import, so it is unit-tested.
import type { SessionInfo } from "./protocol";

/** `just now`, `5 min ago`, `3 h ago`, `2 days ago` */
export function age(iso: string, now: number): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const minutes = Math.floor(Math.max(0, now - then) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  return days === 1 ? "yesterday" : `${days} days ago`;
}

export function turnsText(turns: number): string {
  return turns === 1 ? "1 turn" : `${turns} turns`;
}

/** The folder's last part, for the picker (the full path goes in the detail). */
export function folderName(workspace: string | undefined): string {
  if (workspace === undefined || workspace === "") return "";
  const parts = workspace.replace(/[\\/]+$/, "").split(/[\\/]/);
  return parts.at(-1) || workspace;
}

export interface SessionPickItem {
  label: string;
  description: string;
  detail: string;
}

export function sessionPickItem(session: SessionInfo, current: string | undefined, now: number): SessionPickItem {
  const folder = folderName(session.workspace);
  const description = [turnsText(session.turns), age(session.updatedAt, now), session.sessionId === current ? "current" : ""].filter(Boolean).join(" · ");
  const detail = [folder !== "" ? `$(folder) ${folder}` : "", session.parentId ? `forked from ${session.parentId}` : "", session.workspace ?? ""]
    .filter(Boolean)
    .join(" · ");
  return { label: session.title !== "" ? session.title : "(untitled)", description, detail };
}
