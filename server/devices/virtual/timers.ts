/** The phone's one abortable timer: boot delays, `sleep`. */

/** setTimeout's longest delay (2^31-1 ms, about 24.8 days); longer ones fire at once. */
const MAX_TIMEOUT = 2 ** 31 - 1;

/**
 * Resolves after ms, or as soon as the signal aborts (check signal.aborted to tell which).
 * Waits beyond setTimeout's limit are chained, so `sleep 30d` sleeps thirty days.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    let remaining = Number.isNaN(ms) ? 0 : Math.max(0, ms);
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const arm = () => {
      if (remaining <= 0) {
        done();
        return;
      }
      const step = Math.min(remaining, MAX_TIMEOUT);
      remaining -= step;
      timer = setTimeout(arm, step);
    };
    signal.addEventListener('abort', done, { once: true });
    arm();
  });
}
