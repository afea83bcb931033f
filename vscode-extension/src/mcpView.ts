// The "MCP Servers" tree view: each server's state, its tools under it, and configuration
// problems; fed by tiller/mcp/list after a (re)start and after each turn, and started on demand.
import * as vscode from "vscode";
import { mcpRow, mcpSummary } from "./mcpText";
import type { McpList, McpServerInfo, State } from "./protocol";
import type { TillerServer } from "./server";

export const MCP_VIEW_ID = "tiller.mcp";
export const MCP_REFRESH_COMMAND = "tiller.mcpRefresh";

type Node = { kind: "server"; server: McpServerInfo } | { kind: "leaf"; text: string; problem: boolean };

class McpTree implements vscode.TreeDataProvider<Node> {
  private list: McpList = { servers: [], problems: [] };
  private readonly changed = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  set(list: McpList): void {
    this.list = list;
    this.changed.fire(undefined);
  }

  get servers(): McpServerInfo[] {
    return this.list.servers;
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "leaf") {
      const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon(node.problem ? "warning" : "tools");
      item.tooltip = node.text;
      return item;
    }
    const row = mcpRow(node.server);
    const state = node.server.tools.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(row.label, state);
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.iconPath = new vscode.ThemeIcon(row.icon);
    item.accessibilityInformation = { label: `${row.label}, ${row.description}` };
    return item;
  }

  getChildren(node?: Node): Node[] {
    if (node === undefined) {
      const servers: Node[] = this.list.servers.map((server) => ({ kind: "server", server }));
      const problems: Node[] = this.list.problems.map((text) => ({ kind: "leaf", text, problem: true }));
      return [...servers, ...problems];
    }
    return node.kind === "server" ? node.server.tools.map((text) => ({ kind: "leaf", text, problem: false })) : [];
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function createMcpView(server: TillerServer): vscode.Disposable {
  const tree = new McpTree();
  const view = vscode.window.createTreeView(MCP_VIEW_ID, { treeDataProvider: tree });
  const load = async (start: boolean): Promise<void> => {
    try {
      tree.set(await server.request("tiller/mcp/list", { start }));
    } catch {
      return; // a server that is restarting: the next connection loads it again
    }
    view.description = mcpSummary(tree.servers);
    view.message = tree.servers.length > 0 ? undefined : "No MCP servers configured: add them to .mcp.json, ~/.claude.json or ~/.config/tiller/settings.json (mcpServers).";
  };
  let busy = false;
  const onState = server.onState((state: State) => {
    if (busy && !state.busy) {
      void load(false); // a turn may have started servers
    }
    busy = state.busy;
  });
  const onConnection = server.onConnection((connection) => {
    if (connection === "running") {
      void load(false);
    }
  });
  const refresh = vscode.commands.registerCommand(MCP_REFRESH_COMMAND, () => load(true));
  return vscode.Disposable.from(tree, view, onState, onConnection, refresh);
}
