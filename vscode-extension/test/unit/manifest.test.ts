// What package.json promises a newcomer (issue 36): the chat has the side bar's room, it opens in
// an editor tab too, an empty Permissions view says where rules come from, and the web tools
// have settings a workspace cannot turn on before it is trusted.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { SETTING_NAMES, WEB_TOOLS } from "../../src/initOptions";
import { RULES_LISTED_CONTEXT } from "../../src/permissionsText";

interface Manifest {
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
  contributes: {
    views: Record<string, { id: string; visibility?: string; type?: string }[]>;
    viewsWelcome: { view: string; contents: string; when?: string }[];
    commands: { command: string; title: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    configuration: { properties: Record<string, { type: string; default: unknown; scope?: string }> };
  };
}

/** chat/hosts.ts's CHAT_PANEL_TYPE (that module needs VS Code to load). */
const CHAT_PANEL_TYPE = "tiller.chatPanel";

const manifest = JSON.parse(readFileSync(path.resolve(__dirname, "..", "..", "package.json"), "utf8")) as Manifest;

test("the chat has the side bar to itself at first: the other Tiller views start collapsed", () => {
  const views = manifest.contributes.views.tiller ?? [];
  assert.equal(views[0]?.id, "tiller.chat");
  assert.equal(views[0]?.visibility, undefined, "the chat is open");
  assert.deepEqual(
    views.slice(1).map((view) => [view.id, view.visibility]),
    [
      ["tiller.todos", "collapsed"],
      ["tiller.permissions", "collapsed"],
      ["tiller.mcp", "collapsed"],
    ],
  );
});

test("the chat opens in an editor tab from the palette and the chat's title bar, and comes back after a reload", () => {
  assert.ok(manifest.contributes.commands.some((command) => command.command === "tiller.openChatInEditor" && command.title === "Open Chat in Editor"));
  assert.ok((manifest.contributes.menus["view/title"] ?? []).some((item) => item.command === "tiller.openChatInEditor" && item.when === "view == tiller.chat"));
  assert.ok(manifest.activationEvents.includes(`onWebviewPanel:${CHAT_PANEL_TYPE}`), "VS Code restores the tab only with its serializer's extension active");
  const inTab = (manifest.contributes.menus["editor/title"] ?? []).filter((item) => item.when === `activeWebviewPanelId == '${CHAT_PANEL_TYPE}'`);
  assert.deepEqual(inTab.map((item) => item.command), ["tiller.newSession", "tiller.history"]);
});

test("an empty Permissions view says where rules come from and offers to add one; before the server lists them, that they come", () => {
  const welcome = manifest.contributes.viewsWelcome.filter((entry) => entry.view === "tiller.permissions");
  const listed = welcome.find((entry) => entry.when === RULES_LISTED_CONTEXT);
  const waiting = welcome.find((entry) => entry.when === `!${RULES_LISTED_CONTEXT}`);
  assert.ok(listed !== undefined && waiting !== undefined, JSON.stringify(welcome));
  for (const file of [".tiller/settings.local.json", ".tiller/settings.json", "~/.config/tiller/settings.json", ".claude/settings.json", "~/.claude/settings.json"]) {
    assert.ok(listed.contents.includes(file), `names ${file}`);
  }
  assert.match(listed.contents, /\[Add a Rule\]\(command:tiller\.permissions\.add\)/);
  assert.match(waiting.contents, /once the Tiller server runs/);
});

test("web search and fetch have settings, off by default, that a workspace cannot turn on in Restricted Mode", () => {
  const properties = manifest.contributes.configuration.properties;
  const restricted = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
  for (const tool of WEB_TOOLS) {
    assert.deepEqual([properties[`tiller.${tool}.enabled`]?.type, properties[`tiller.${tool}.enabled`]?.default], ["boolean", false]);
    for (const list of ["allowedDomains", "blockedDomains"]) {
      assert.deepEqual([properties[`tiller.${tool}.${list}`]?.type, properties[`tiller.${tool}.${list}`]?.default], ["array", []]);
    }
    for (const suffix of ["enabled", "allowedDomains", "blockedDomains"]) {
      const name = `${tool}.${suffix}`;
      assert.ok(restricted.includes(`tiller.${name}`), `tiller.${name} is restricted`);
      assert.ok((SETTING_NAMES as readonly string[]).includes(name), `tiller.${name} is read`);
    }
  }
});

test("every setting the extension reads is declared", () => {
  for (const name of SETTING_NAMES) assert.ok(`tiller.${name}` in manifest.contributes.configuration.properties, `tiller.${name}`);
});
