import assert from "node:assert/strict";
import { test } from "node:test";
import { mcpRow, mcpSummary } from "../../src/mcpText";
import type { McpServerInfo } from "../../src/protocol";

function server(overrides: Partial<McpServerInfo> = {}): McpServerInfo {
  return { name: "time", transport: "stdio", source: ".mcp.json", state: "notStarted", tools: [], ...overrides };
}

test("a running server shows its tool count", () => {
  const row = mcpRow(server({ state: "running", tools: ["mcp__time__a", "mcp__time__b"] }));
  assert.equal(row.description, "running · 2 tools");
  assert.equal(row.icon, "pass-filled");
});

test("a failed server says why, and where it is configured", () => {
  const row = mcpRow(server({ state: "failed", error: "command not found (uvx)" }));
  assert.equal(row.description, "failed: command not found (uvx)");
  assert.match(row.tooltip, /stdio, from \.mcp\.json/);
});

test("a workspace server not enabled reads as such", () => {
  const row = mcpRow(server({ state: "blocked", error: "not enabled: add it to enabledMcpjsonServers" }));
  assert.equal(row.description, "not enabled");
  assert.match(row.tooltip, /enabledMcpjsonServers/);
});

test("the summary counts running servers", () => {
  assert.equal(mcpSummary([]), undefined);
  assert.equal(mcpSummary([server({ state: "running" }), server()]), "1/2 running");
});
