// The Permissions view: the rules in force by scope (tiller/permissions), with add and remove
// (tiller/permissions/add, /remove; added rules go to .tiller/settings.local.json unless a
// scope is chosen). Claude Code's .claude files are listed, never rewritten.
import * as vscode from "vscode";
import { errorMessage, type PermissionList, type Rule as RuleWire, type RuleEffect, type WritableRuleScope } from "./protocol";
import { RULES_LISTED_CONTEXT, SCOPE_LABELS, ruleDescription, rulesByScope } from "./permissionsText";
import type { TillerServer } from "./server";

export const PERMISSIONS_VIEW_ID = "tiller.permissions";

type Node = { kind: "scope"; label: string; rules: RuleWire[] } | { kind: "rule"; rule: RuleWire } | { kind: "problem"; text: string };

const EFFECT_ICONS: Record<RuleEffect, vscode.ThemeIcon> = {
  allow: new vscode.ThemeIcon("pass", new vscode.ThemeColor("testing.iconPassed")),
  ask: new vscode.ThemeIcon("question"),
  deny: new vscode.ThemeIcon("circle-slash", new vscode.ThemeColor("testing.iconFailed")),
};

class PermissionTree implements vscode.TreeDataProvider<Node> {
  private listing: PermissionList = { rules: [], problems: [] };
  private readonly changed = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  set(listing: PermissionList): void {
    this.listing = listing;
    this.changed.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (node === undefined) {
      const scopes: Node[] = rulesByScope(this.listing.rules).map((group) => ({ kind: "scope", label: SCOPE_LABELS[group.scope], rules: group.rules }));
      return [...scopes, ...this.listing.problems.map((text): Node => ({ kind: "problem", text }))];
    }
    return node.kind === "scope" ? node.rules.map((rule): Node => ({ kind: "rule", rule })) : [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case "scope":
        return new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      case "problem": {
        const item = new vscode.TreeItem(node.text);
        item.iconPath = new vscode.ThemeIcon("warning");
        return item;
      }
      case "rule": {
        const item = new vscode.TreeItem(node.rule.rule);
        item.description = ruleDescription(node.rule);
        item.iconPath = EFFECT_ICONS[node.rule.effect];
        item.contextValue = node.rule.source.startsWith(".claude") || node.rule.source.includes("/.claude/") ? "claudeRule" : "rule";
        item.tooltip = `${node.rule.effect} ${node.rule.rule} (${node.rule.scope} ${node.rule.source})`;
        return item;
      }
    }
  }
}

export function createPermissionsView(server: TillerServer): vscode.Disposable {
  const tree = new PermissionTree();
  const listed = (known: boolean): void => void vscode.commands.executeCommand("setContext", RULES_LISTED_CONTEXT, known);
  const refresh = async (): Promise<void> => {
    try {
      tree.set(await server.request("tiller/permissions", {}));
      listed(true);
    } catch {
      // the server went away: the next start refreshes
    }
  };
  const changed = (listing: PermissionList & { message: string }): void => {
    tree.set(listing);
    void vscode.window.showInformationMessage(listing.message);
  };
  return vscode.Disposable.from(
    vscode.window.createTreeView(PERMISSIONS_VIEW_ID, { treeDataProvider: tree }),
    server.onConnection((connection) => {
      if (connection === "running") void refresh();
      else listed(false);
    }),
    // A turn may have changed a settings file (asked first), and "allow for session" adds rules.
    server.onEvent((event) => {
      if (event.type === "turnEnded" || event.type === "confirmDecided") void refresh();
    }),
    vscode.commands.registerCommand("tiller.permissions.refresh", refresh),
    vscode.commands.registerCommand("tiller.permissions.add", async () => {
      const asked = await askRule();
      if (asked === undefined) return;
      try {
        changed(await server.request("tiller/permissions/add", asked));
      } catch (error) {
        void vscode.window.showErrorMessage(errorMessage(error));
      }
    }),
    vscode.commands.registerCommand("tiller.permissions.remove", async (node?: Node) => {
      if (node?.kind !== "rule") return;
      try {
        changed(await server.request("tiller/permissions/remove", { rule: node.rule.rule }));
      } catch (error) {
        void vscode.window.showErrorMessage(errorMessage(error));
      }
    }),
  );
}

/** Asks what a new rule does, the rule, and where to keep it (undefined: the user gave up). */
async function askRule(): Promise<{ effect: RuleEffect; rule: string; scope: WritableRuleScope } | undefined> {
  const effects: { label: string; effect: RuleEffect }[] = [
    { label: "allow: run without asking", effect: "allow" },
    { label: "ask: always ask first", effect: "ask" },
    { label: "deny: never run", effect: "deny" },
  ];
  const chosen = await vscode.window.showQuickPick(effects, { title: "Tiller: Add a Permission Rule", placeHolder: "What the rule does" });
  if (chosen === undefined) return undefined;
  const effect = chosen.effect;
  const rule = await vscode.window.showInputBox({
    title: `Tiller: ${effect} rule`,
    prompt: "Bash(git diff:*), Bash(npm test), Read(src/**), Edit(docs/**), WebFetch(domain:example.com), mcp__server",
    validateInput: (text) => (text.trim() === "" ? "A rule, e.g. Bash(git diff:*)" : undefined),
  });
  if (rule === undefined) return undefined;
  const scopes: { label: string; scope: WritableRuleScope }[] = [
    { label: "Local: .tiller/settings.local.json (not checked in)", scope: "local" },
    { label: "Workspace: .tiller/settings.json (checked in)", scope: "workspace" },
    { label: "User: ~/.config/tiller/settings.json", scope: "user" },
  ];
  const where = await vscode.window.showQuickPick(scopes, { title: "Tiller: where to keep it" });
  if (where === undefined) return undefined;
  return { effect, rule: rule.trim(), scope: where.scope };
}
