// Settings typed key by key restart the server once they stop changing, and never two
// restarts run at once: tested with a controlled clock, not with typing speed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CrashWindow, Debounce, Lifecycle, type Schedule } from "../../src/restarts";

/** A clock the test moves by hand. */
class ManualClock {
  now = 0;
  private timers: Array<{ at: number; callback: () => void; cancelled: boolean }> = [];

  readonly schedule: Schedule = (callback, ms) => {
    const timer = { at: this.now + ms, callback, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };

  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.now = due.at;
      due.cancelled = true;
      due.callback();
    }
    this.now = until;
  }
}

const DELAY = 1500;

test("changes within the debounce make one restart, after the last change", () => {
  const clock = new ManualClock();
  const fired: number[] = [];
  const debounce = new Debounce(DELAY, () => fired.push(clock.now), clock.schedule);
  for (const gap of [0, 400, 1000, 1499]) {
    clock.advance(gap);
    debounce.trigger();
  }
  const last = clock.now;
  clock.advance(DELAY - 1);
  assert.deepEqual(fired, []);
  clock.advance(1);
  assert.deepEqual(fired, [last + DELAY]);
  clock.advance(10 * DELAY);
  assert.deepEqual(fired, [last + DELAY], "one restart for the burst");
});

test("changes further apart than the debounce make one restart each", () => {
  const clock = new ManualClock();
  let fired = 0;
  const debounce = new Debounce(DELAY, () => (fired += 1), clock.schedule);
  debounce.trigger();
  clock.advance(DELAY);
  debounce.trigger();
  clock.advance(DELAY);
  assert.equal(fired, 2);
});

test("a cancelled debounce (an explicit restart came first) does not fire", () => {
  const clock = new ManualClock();
  let fired = 0;
  const debounce = new Debounce(DELAY, () => (fired += 1), clock.schedule);
  debounce.trigger();
  clock.advance(DELAY / 2);
  debounce.cancel();
  clock.advance(10 * DELAY);
  assert.equal(fired, 0);
});

/** A lifecycle step the test finishes by hand. */
function heldStep(log: string[], name: string): { step: () => Promise<void>; finish: () => void } {
  let finish = (): void => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    step: async () => {
      log.push(`${name} begins`);
      await done;
      log.push(`${name} ends`);
    },
    finish: () => finish(),
  };
}

test("lifecycle steps never overlap, and a restart asked for while one is queued joins it", async () => {
  const lifecycle = new Lifecycle();
  const log: string[] = [];
  const start = heldStep(log, "start");
  const first = heldStep(log, "restart 1");
  const second = heldStep(log, "restart 2");
  const starting = lifecycle.run(start.step);
  const restarting = lifecycle.restart(first.step);
  const joined = lifecycle.restart(second.step);
  assert.equal(joined, restarting, "the queued restart is shared");
  await Promise.resolve();
  assert.deepEqual(log, ["start begins"]);
  start.finish();
  await starting;
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(log, ["start begins", "start ends", "restart 1 begins"]);
  // A restart asked for once the queued one has begun is a new one, after it.
  const later = lifecycle.restart(second.step);
  assert.notEqual(later, restarting);
  first.finish();
  await restarting;
  second.finish();
  await later;
  assert.deepEqual(log, ["start begins", "start ends", "restart 1 begins", "restart 1 ends", "restart 2 begins", "restart 2 ends"]);
});

test("a failed step does not stop the next one", async () => {
  const lifecycle = new Lifecycle();
  const failed = lifecycle.run(() => Promise.reject(new Error("no python")));
  await assert.rejects(failed);
  let ran = false;
  await lifecycle.restart(async () => {
    ran = true;
  });
  assert.ok(ran);
});

test("a crashed server restarts up to 5 times in 3 minutes, not a 6th time; older crashes are forgotten", () => {
  const minute = 60_000;
  const crashes = new CrashWindow(5, 3 * minute);
  for (const at of [0, 1, 2, 3, 4]) {
    assert.equal(crashes.crashed(at * 10_000), true, `crash ${at + 1} restarts`);
  }
  assert.equal(crashes.crashed(50_000), false, "the 6th crash within 3 minutes does not");
  // 3 minutes after the first crashes, only the latest ones count.
  assert.equal(crashes.crashed(3 * minute + 25_000), true);
});
