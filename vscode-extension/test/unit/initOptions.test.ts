import assert from "node:assert/strict";
import { test } from "node:test";
import { providerFor, toInitializationOptions, type Settings } from "../../src/initOptions";

const base: Settings = {
  pythonPath: "",
  model: "",
  permissionMode: "default",
  toolBudget: 20,
  baseUrl: "",
  demoScript: "",
  dataDir: "",
};

test("without an API key and a base URL the bundled offline demo runs", () => {
  assert.deepEqual(providerFor(base, false), { kind: "scripted", script: "demo" });
});

test("with an API key the real API is used", () => {
  assert.deepEqual(providerFor(base, true), { kind: "anthropic" });
});

test("a base URL selects the anthropic provider even without a key", () => {
  assert.deepEqual(providerFor({ ...base, baseUrl: "http://127.0.0.1:9" }, false), { kind: "anthropic", baseUrl: "http://127.0.0.1:9" });
});

test("an explicit demo script wins over everything", () => {
  assert.deepEqual(providerFor({ ...base, baseUrl: "http://x", demoScript: "/tmp/s.json" }, true), { kind: "scripted", script: "/tmp/s.json" });
});

test("empty settings are left out and the key never appears", () => {
  const options = toInitializationOptions({ ...base, model: "claude-x", dataDir: "/data", toolBudget: 0 }, true, true);
  assert.deepEqual(options, {
    permissionMode: "default",
    toolBudget: 0,
    provider: { kind: "anthropic" },
    workspaceTrust: { trusted: true, by: "VS Code workspace trust" },
    model: "claude-x",
    dataDir: "/data",
  });
  assert.ok(!JSON.stringify(toInitializationOptions(base, false, true)).includes("apiKey"));
});
