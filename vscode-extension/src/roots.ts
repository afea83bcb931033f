// The workspace folders as the server names them (server/tiller/workspace/roots.py): files of
// the first (primary) folder plainly, files of another folder under the folder's name
// ("api/src/x.py"), or absolutely when the name cannot say it unambiguously (two folders with
// one name, or the primary folder has an entry of that name). Pure: callers pass the folders
// and how to ask whether a path exists.
import * as path from "node:path";

export interface Folder {
  readonly name: string;
  readonly fsPath: string;
}

export type Exists = (fsPath: string) => boolean;

/** Folder names that name exactly one folder. */
function qualifiers(folders: readonly Folder[]): Map<string, Folder> {
  const count = new Map<string, number>();
  for (const folder of folders) count.set(folder.name, (count.get(folder.name) ?? 0) + 1);
  return new Map(folders.filter((f) => count.get(f.name) === 1 && !f.name.includes("/")).map((f) => [f.name, f]));
}

function inside(folder: Folder, fsPath: string): string | undefined {
  const rel = path.relative(folder.fsPath, fsPath);
  if (rel === "") return "";
  return rel.startsWith("..") || path.isAbsolute(rel) ? undefined : rel.split(path.sep).join("/");
}

/** How the server shows the file `fsPath` (absolute when it is outside every folder). */
export function shownPath(folders: readonly Folder[], fsPath: string, exists: Exists): string {
  const holding = [...folders]
    .map((folder, index) => ({ folder, index, rel: inside(folder, fsPath) }))
    .filter((found) => found.rel !== undefined)
    .sort((a, b) => b.folder.fsPath.length - a.folder.fsPath.length)[0];
  if (holding === undefined || holding.rel === undefined) return fsPath;
  const rel = holding.rel;
  if (folders.length < 2) return rel === "" ? "." : rel;
  const names = qualifiers(folders);
  if (holding.index === 0) {
    const first = rel.split("/")[0] ?? "";
    return rel === "" ? "." : names.has(first) ? `./${rel}` : rel;
  }
  const name = holding.folder.name;
  if (names.get(name) === holding.folder && !exists(path.join(folders[0]!.fsPath, name))) {
    return rel === "" ? name : `${name}/${rel}`;
  }
  return fsPath;
}

/** The file a path shown by the server names (relative paths: the primary folder's, unless they
 *  start with another folder's name). */
export function resolveShown(folders: readonly Folder[], shown: string, exists: Exists): string {
  if (path.isAbsolute(shown)) return shown;
  const primary = folders[0];
  if (primary === undefined) return shown;
  const [first = "", ...rest] = shown.split("/");
  const folder = folders.length > 1 ? qualifiers(folders).get(first) : undefined;
  if (folder === undefined || exists(path.join(primary.fsPath, first))) return path.join(primary.fsPath, shown);
  return path.join(folder.fsPath, ...rest);
}
