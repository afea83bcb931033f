import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSettings, providerFor, sameSettings, toInitializationOptions, WEB_TOOL_OFF, type Settings } from "../../src/initOptions";

const base: Settings = {
  pythonPath: "",
  model: "",
  permissionMode: "default",
  toolBudget: 20,
  baseUrl: "",
  demoScript: "",
  dataDir: "",
  webSearch: WEB_TOOL_OFF,
  webFetch: WEB_TOOL_OFF,
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

test("web search and fetch are sent as initializationOptions.webSearch / webFetch once a setting turns them on (issue 36)", () => {
  const { settings, warnings } = parseSettings({
    "webSearch.enabled": true,
    "webSearch.allowedDomains": [" docs.python.org ", "developer.mozilla.org"],
    "webFetch.enabled": true,
    "webFetch.blockedDomains": ["example.com"],
  });
  assert.deepEqual(warnings, []);
  const options = toInitializationOptions(settings, true, true);
  assert.deepEqual(options.webSearch, { enabled: true, allowedDomains: ["docs.python.org", "developer.mozilla.org"] });
  assert.deepEqual(options.webFetch, { enabled: true, blockedDomains: ["example.com"] });
});

test("a web tool left off is left out of the options: the server's own settings files decide", () => {
  const off = toInitializationOptions(parseSettings({ "webSearch.allowedDomains": ["docs.python.org"] }).settings, true, true);
  assert.ok(!("webSearch" in off) && !("webFetch" in off), JSON.stringify(off));
  assert.deepEqual(toInitializationOptions(parseSettings({ "webFetch.enabled": true }).settings, true, true).webFetch, { enabled: true });
});

test("wrong web tool settings are named, and the server still starts with what can be used", () => {
  const both = parseSettings({ "webSearch.enabled": true, "webSearch.allowedDomains": ["a.example"], "webSearch.blockedDomains": ["b.example"] });
  assert.deepEqual(toInitializationOptions(both.settings, true, true).webSearch, { enabled: true, allowedDomains: ["a.example"] });
  assert.match(both.warnings.join("\n"), /'tiller\.webSearch\.allowedDomains' and 'tiller\.webSearch\.blockedDomains' are both set; the API takes one list: using allowedDomains only/);
  const wrong = parseSettings({ "webFetch.enabled": "yes", "webSearch.enabled": true, "webSearch.blockedDomains": "x.example", "webSearch.allowedDomains": ["ok.example", 3, " "] });
  assert.equal(wrong.settings.webFetch.enabled, false);
  assert.deepEqual(wrong.settings.webSearch, { enabled: true, allowedDomains: ["ok.example"], blockedDomains: [] });
  assert.deepEqual(wrong.warnings, [
    `The setting 'tiller.webSearch.allowedDomains' has entries that are not domains (3, " "); they are left out.`,
    `The setting 'tiller.webSearch.blockedDomains' is "x.example", not a list of domains such as ["docs.python.org"]; using none.`,
    `The setting 'tiller.webFetch.enabled' is "yes", not true or false; using false (off).`,
  ]);
});

test("turning a web tool on or changing its domains restarts the server; the same values do not", () => {
  const on = parseSettings({ "webSearch.enabled": true, "webSearch.allowedDomains": ["a.example"] });
  assert.ok(sameSettings(on, parseSettings({ "webSearch.enabled": true, "webSearch.allowedDomains": ["a.example"] })));
  assert.ok(!sameSettings(on, parseSettings({ "webSearch.enabled": true, "webSearch.allowedDomains": ["b.example"] })));
  assert.ok(!sameSettings(on, parseSettings({ "webSearch.allowedDomains": ["a.example"] })));
});
