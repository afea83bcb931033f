// Settings read with a message for each wrong value, and the model picker taking a typed id.
import assert from "node:assert/strict";
import { test } from "node:test";
import { modeNamed, parseSettings, validateSettings, WEB_TOOL_OFF } from "../../src/initOptions";
import { modelPickItems } from "../../src/modelPick";
import type { ModelInfo } from "../../src/protocol";

test("valid settings give no warning; unset ones take their defaults", () => {
  const { settings, warnings } = parseSettings({ permissionMode: "acceptEdits", toolBudget: 5, baseUrl: " https://x.example " });
  assert.deepEqual(warnings, []);
  assert.equal(settings.permissionMode, "acceptEdits");
  assert.equal(settings.toolBudget, 5);
  assert.equal(settings.baseUrl, "https://x.example");
  assert.deepEqual(parseSettings({}), {
    settings: { pythonPath: "", model: "", permissionMode: "default", toolBudget: 20, baseUrl: "", demoScript: "", dataDir: "", webSearch: WEB_TOOL_OFF, webFetch: WEB_TOOL_OFF },
    warnings: [],
  });
});

test("an invalid permissionMode says which value is wrong and what is used instead", () => {
  const { settings, warnings } = parseSettings({ permissionMode: "auto" });
  assert.equal(settings.permissionMode, "default");
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? "", /'tiller\.permissionMode' is "auto"/);
  assert.match(warnings[0] ?? "", /using 'default' \(ask before edits\)/);
  assert.match(warnings[0] ?? "", /'acceptEdits' \(accept edits\)/);
  // The words the UI shows are taken too.
  assert.equal(parseSettings({ permissionMode: "accept edits" }).settings.permissionMode, "acceptEdits");
  assert.equal(modeNamed("Ask-Before-Edits"), "default");
  assert.equal(modeNamed("yolo"), undefined);
});

test("an invalid toolBudget says which value is wrong and what is used instead", () => {
  for (const wrong of [-1, "30", Number.NaN, true]) {
    const { settings, warnings } = parseSettings({ toolBudget: wrong });
    assert.equal(settings.toolBudget, 20, String(wrong));
    assert.equal(warnings.length, 1, String(wrong));
    assert.match(warnings[0] ?? "", /'tiller\.toolBudget' is .*Using 20\./);
  }
  const rounded = parseSettings({ toolBudget: 12.5 });
  assert.equal(rounded.settings.toolBudget, 12);
  assert.match(rounded.warnings[0] ?? "", /12\.5, not a whole number; using 12/);
  assert.deepEqual(parseSettings({ toolBudget: 0 }).warnings, [], "0 means never ask");
});

test("a bad baseUrl is a startup problem that names the setting; a fixed one is none", () => {
  const { settings } = parseSettings({ baseUrl: "localhost:8080" });
  assert.match(validateSettings(settings) ?? "", /'tiller\.baseUrl' is not a valid http\(s\) URL: 'localhost:8080'/);
  assert.equal(validateSettings(parseSettings({ baseUrl: "http://localhost:8080" }).settings), undefined);
});

const MODELS: ModelInfo[] = [{ id: "claude-demo", displayName: "Demo model", contextWindow: 200_000, maxOutput: 8_000, thinking: "none" }];

test("the model picker offers a typed id it does not list, first when nothing listed matches", () => {
  assert.deepEqual(
    modelPickItems(MODELS, "claude-demo", "").map((item) => [item.label, item.description, item.id]),
    [["Demo model", "claude-demo · current", "claude-demo"]],
  );
  const typed = modelPickItems(MODELS, "claude-demo", " claude-opus-4-1 ");
  assert.deepEqual(typed.map((item) => item.id), ["claude-opus-4-1", "claude-demo"]);
  assert.equal(typed[0]?.label, "Use “claude-opus-4-1”");
  assert.equal(typed[0]?.alwaysShow, true);
  // Filtering the list by part of a listed id: the typed item comes last.
  assert.deepEqual(modelPickItems(MODELS, "claude-demo", "demo").map((item) => item.id), ["claude-demo", "demo"]);
  // A listed id, or words (a display-name filter), offer nothing more.
  assert.equal(modelPickItems(MODELS, "claude-demo", "claude-demo").length, 1);
  assert.equal(modelPickItems(MODELS, "claude-demo", "demo model").length, 1);
});
