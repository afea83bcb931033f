#!/usr/bin/env node
// A second, independent ACP client for Tiller: the TypeScript SDK (npm @agentclientprotocol/sdk,
// pinned in tests/e2e/acp-ts/package-lock.json and installed there by scripts/setup-node-tests.sh;
// never a dependency of Tiller), shaped like the SDK's example client but answering on its own:
// every permission gets its "allow once" option.
//
//   node tests/e2e/acp_ts_client.mjs WORKSPACE CMD [ARGS...]
//   (TILLER_ACP_TS_DIR=DIR: the SDK installed in DIR/node_modules instead)
//
// e.g. `... /path/to/ws tiller-server --acp`. Prints one line per update, then
// `stopReason: <reason>`; exit code 0 when the turn ended with end_turn.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const sdkDir = process.env.TILLER_ACP_TS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), "acp-ts");
const sdkMain = createRequire(join(sdkDir, "package.json")).resolve("@agentclientprotocol/sdk");
const acp = await import(pathToFileURL(sdkMain).href);

const [workspace, command, ...args] = process.argv.slice(2);
if (!workspace || !command) {
  console.error("usage: acp_ts_client.mjs WORKSPACE CMD [ARGS...]");
  process.exit(64);
}
const prompt = process.env.TILLER_ACP_PROMPT ?? "Read notes.txt, then write out.txt.";

const agentProcess = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], cwd: workspace });
const stream = acp.ndJsonStream(
  Writable.toWeb(agentProcess.stdin),
  Readable.toWeb(agentProcess.stdout),
);

function show(update) {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk":
      console.log(`${update.sessionUpdate}: ${update.content.text ?? `[${update.content.type}]`}`);
      break;
    case "tool_call":
      console.log(`tool_call: ${update.toolCallId} ${update.kind} ${update.status} ${update.title}`);
      break;
    case "tool_call_update":
      console.log(`tool_call_update: ${update.toolCallId} ${update.status ?? ""}`);
      break;
    default:
      console.log(update.sessionUpdate);
  }
}

let code = 1;
try {
  const answer = await acp
    .client({ name: "tiller-ts-check" })
    .onRequest("session/request_permission", (c) => {
      const { toolCall, options } = c.params;
      const allow = options.find((o) => o.kind === "allow_once") ?? options[0];
      console.log(`permission: ${toolCall.toolCallId} -> ${allow.optionId}`);
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .connectWith(stream, async (agent) => {
      const init = await agent.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      console.log(`initialized: protocol ${init.protocolVersion}, agent ${init.agentInfo?.name}`);
      console.log(`loadSession: ${init.agentCapabilities?.loadSession}`);
      return agent.buildSession(workspace).withSession(async (session) => {
        console.log(`session: ${session.sessionId}`);
        session.prompt(prompt);
        for (;;) {
          const message = await session.nextUpdate();
          if (message.kind === "stop") return message.response;
          show(message.notification.update);
        }
      });
    });
  console.log(`stopReason: ${answer.stopReason}`);
  code = answer.stopReason === "end_turn" ? 0 : 1;
} catch (error) {
  console.error("error:", error);
} finally {
  agentProcess.stdin.end();
  agentProcess.kill();
  process.exit(code);
}
