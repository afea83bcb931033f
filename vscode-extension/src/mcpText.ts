// How an MCP server reads in the "MCP Servers" view (pure: unit-tested without VS Code).
import type { McpServerInfo } from "./protocol";

export interface McpRow {
  label: string;
  description: string;
  tooltip: string;
  icon: "pass-filled" | "circle-large-outline" | "error" | "lock";
}

export function mcpRow(server: McpServerInfo): McpRow {
  const where = `${server.transport}, from ${server.source}`;
  const count = server.tools.length;
  switch (server.state) {
    case "running":
      return {
        label: server.name,
        description: `running · ${count} tool${count === 1 ? "" : "s"}`,
        tooltip: `${server.name} (${where}): running`,
        icon: "pass-filled",
      };
    case "failed":
      return {
        label: server.name,
        description: `failed: ${server.error ?? "unknown"}`,
        tooltip: `${server.name} (${where}) failed: ${server.error ?? "unknown"}`,
        icon: "error",
      };
    case "blocked":
      return {
        label: server.name,
        description: "not enabled",
        tooltip: `${server.name} (${where}): ${server.error ?? "not enabled"}`,
        icon: "lock",
      };
    default:
      return {
        label: server.name,
        description: "not started",
        tooltip: `${server.name} (${where}): starts when first needed`,
        icon: "circle-large-outline",
      };
  }
}

/** The view's one-line summary: "2/3 running", or undefined when there are none. */
export function mcpSummary(servers: McpServerInfo[]): string | undefined {
  if (servers.length === 0) {
    return undefined;
  }
  return `${servers.filter((s) => s.state === "running").length}/${servers.length} running`;
}
