// When the server (re)starts: lifecycle steps one at a time, a restart asked for while one is
// queued joins it, and settings typed key by key restart once they stop changing. Pure (no
// vscode import, the clock injected), so it is unit-tested with a controlled clock.

/** Runs `callback` after `ms`; the returned function cancels it. */
export type Schedule = (callback: () => void, ms: number) => () => void;

export const realSchedule: Schedule = (callback, ms) => {
  const timer = setTimeout(callback, ms);
  return () => clearTimeout(timer);
};

/** Calls `action` once `delayMs` have passed without another `trigger()`. */
export class Debounce {
  private cancelPending: (() => void) | undefined;

  constructor(
    private readonly delayMs: number,
    private readonly action: () => void,
    private readonly schedule: Schedule = realSchedule,
  ) {}

  trigger(): void {
    this.cancel();
    this.cancelPending = this.schedule(() => {
      this.cancelPending = undefined;
      this.action();
    }, this.delayMs);
  }

  cancel(): void {
    this.cancelPending?.();
    this.cancelPending = undefined;
  }
}

/**
 * Lifecycle steps (start, restart, stop) run one after another, never two at once, whatever
 * the previous one's outcome. A restart asked for while another is queued and has not begun
 * is that restart, not a second one.
 */
export class Lifecycle {
  private tail: Promise<void> = Promise.resolve();
  private queuedRestart: Promise<void> | undefined;

  run(step: () => Promise<void>): Promise<void> {
    this.tail = this.tail.then(step, step);
    return this.tail;
  }

  restart(step: () => Promise<void>): Promise<void> {
    if (this.queuedRestart !== undefined) {
      return this.queuedRestart;
    }
    const queued = this.run(async () => {
      this.queuedRestart = undefined;
      await step();
    });
    this.queuedRestart = queued;
    return queued;
  }
}

/** The crashes of the last `windowMs`: after a crash the server is restarted, unless that makes
 *  more than `max` crashes within the window. */
export class CrashWindow {
  private crashes: number[] = [];

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** Counts a crash at `now` (ms); whether the server may be restarted after it. */
  crashed(now: number): boolean {
    this.crashes = [...this.crashes.filter((t) => now - t < this.windowMs), now];
    return this.crashes.length <= this.max;
  }
}
