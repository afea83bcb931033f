// The server is launched warm (`python -P -m tiller --warm`) until a warm launch fails, then
// plain; `-P` keeps the workspace off the server's sys.path.
import assert from "node:assert/strict";
import { test } from "node:test";
import { serverArgs, WarmChoice } from "../../src/launch";

test("the server is launched warm first", () => {
  const choice = new WarmChoice({});
  assert.equal(choice.warm, true);
  assert.deepEqual(serverArgs(choice.warm), ["-P", "-m", "tiller", "--warm"]);
});

test("a failed warm launch makes the next launches plain", () => {
  const choice = new WarmChoice({});
  assert.equal(choice.launchFailed(true), true, "retry plainly");
  assert.equal(choice.warm, false);
  assert.deepEqual(serverArgs(choice.warm), ["-P", "-m", "tiller"]);
  assert.equal(choice.launchFailed(false), false, "a failed plain launch is not retried here");
});

test("TILLER_WARM=0 launches plainly", () => {
  assert.equal(new WarmChoice({ TILLER_WARM: "0" }).warm, false);
});
