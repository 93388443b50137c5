/** The warm pool as the benchmarks watch it: through the server's `/metrics` (--metrics). */
import type { RunningServer } from '../../server/main.js';

/** Reads one sample of the server's /metrics. */
export async function metric(server: RunningServer, line: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(line + ' '));
  return Number(found?.split(' ')[1] ?? NaN);
}

/** Waits until the pool holds `n` warm phones (what "the pool keeps up" means here). */
export async function poolFull(server: RunningServer, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await metric(server, 'phonelease_pool_phones{state="ready"}')) < n) {
    if (Date.now() > deadline) throw new Error(`the pool did not refill to ${n} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
