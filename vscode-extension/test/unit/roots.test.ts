import assert from "node:assert/strict";
import { test } from "node:test";
import { resolveShown, shownPath, type Folder } from "../../src/roots";

const WEB: Folder = { name: "web", fsPath: "/w/web" };
const API: Folder = { name: "api", fsPath: "/w/api" };
const nothing = (): boolean => false;

test("one folder: files are shown relative to it, as before", () => {
  assert.equal(shownPath([WEB], "/w/web/src/a.ts", nothing), "src/a.ts");
  assert.equal(shownPath([WEB], "/w/web", nothing), ".");
  assert.equal(shownPath([WEB], "/elsewhere/x", nothing), "/elsewhere/x");
  assert.equal(resolveShown([WEB], "api/x.ts", nothing), "/w/web/api/x.ts");
});

test("another folder's files are shown under its name and resolve back into it", () => {
  const folders = [WEB, API];
  assert.equal(shownPath(folders, "/w/api/src/server.py", nothing), "api/src/server.py");
  assert.equal(resolveShown(folders, "api/src/server.py", nothing), "/w/api/src/server.py");
  assert.equal(shownPath(folders, "/w/web/src/a.ts", nothing), "src/a.ts");
  assert.equal(resolveShown(folders, "src/a.ts", nothing), "/w/web/src/a.ts");
});

test("a primary entry named like a folder: ./ for it, the other folder absolute", () => {
  const folders = [WEB, API];
  const hasApi = (p: string): boolean => p === "/w/web/api";
  assert.equal(shownPath(folders, "/w/web/api/x.ts", hasApi), "./api/x.ts");
  assert.equal(shownPath(folders, "/w/api/x.ts", hasApi), "/w/api/x.ts");
  assert.equal(resolveShown(folders, "./api/x.ts", hasApi), "/w/web/api/x.ts");
  assert.equal(resolveShown(folders, "/w/api/x.ts", hasApi), "/w/api/x.ts");
});

test("two folders with one name are shown absolutely", () => {
  const folders = [WEB, { name: "lib", fsPath: "/a/lib" }, { name: "lib", fsPath: "/b/lib" }];
  assert.equal(shownPath(folders, "/b/lib/x.ts", nothing), "/b/lib/x.ts");
  assert.equal(resolveShown(folders, "lib/x.ts", nothing), "/w/web/lib/x.ts");
});
