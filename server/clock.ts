/**
 * Time for the runtime. Deadlines and billing read the clock and schedule through it, so
 * tests drive them with a ManualClock instead of sleeping.
 */

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs fn after ms; returns a cancel function. fn may return a promise. */
  setTimeout(fn: () => unknown, ms: number): () => void;
}

/** Node's timers cap a delay at 2^31-1 ms (about 24.8 days); longer waits re-arm. */
const MAX_DELAY = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    let handle: NodeJS.Timeout;
    let cancelled = false;
    const due = Date.now() + Math.max(0, ms);
    const arm = () => {
      const left = due - Date.now();
      handle = setTimeout(
        () => {
          if (cancelled) return;
          if (due - Date.now() > 0) arm();
          else void fn();
        },
        Math.min(Math.max(0, left), MAX_DELAY),
      );
      handle.unref();
    };
    arm();
    return () => {
      cancelled = true;
      clearTimeout(handle);
    };
  },
};

interface ManualTimer {
  due: number;
  seq: number;
  fn: () => unknown;
}

/** A clock that only moves when told to; advance() runs the timers that fall due, in order. */
export class ManualClock implements Clock {
  private current: number;
  private timers: ManualTimer[] = [];
  private seq = 0;

  constructor(startMs = Date.UTC(2026, 10, 21, 12, 0, 0)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => unknown, ms: number): () => void {
    const timer: ManualTimer = { due: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by ms, running each timer at its due time and awaiting it. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      this.timers.sort((a, b) => a.due - b.due || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.due > target) break;
      this.timers.shift();
      this.current = Math.max(this.current, next.due);
      await next.fn();
    }
    this.current = target;
  }
}

export const seconds = (ms: number): number => Math.floor(ms / 1000);

/** Now on `clock`, in whole seconds. */
export const nowSec = (clock: Clock): number => seconds(clock.now());
