/**
 * A closed-loop HTTP load generator over undici: `concurrency` requests in flight for
 * `seconds`, counting completions. Used by every API benchmark so their figures compare.
 */
import { Pool } from 'undici';

export interface LoadResult {
  requests: number;
  seconds: number;
  perSecond: number;
  errors: number;
  statuses: Record<number, number>;
}

export async function load(
  origin: string,
  makeRequest: (i: number) => {
    method: 'GET' | 'POST';
    path: string;
    headers?: Record<string, string>;
    body?: string;
  },
  opts: { seconds: number; concurrency: number; warmupSeconds?: number },
): Promise<LoadResult> {
  const pool = new Pool(origin, { connections: opts.concurrency, pipelining: 1 });
  let i = 0;
  let counting = false;
  let requests = 0;
  let errors = 0;
  const statuses: Record<number, number> = {};
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const req = makeRequest(i++);
      try {
        const res = await pool.request({ ...req, origin });
        await res.body.dump();
        if (counting) {
          requests++;
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        }
      } catch {
        if (counting) errors++;
      }
    }
  };
  const workers = Array.from({ length: opts.concurrency }, worker);
  await new Promise((r) => setTimeout(r, (opts.warmupSeconds ?? 1) * 1000));
  counting = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, opts.seconds * 1000));
  counting = false;
  const seconds = (performance.now() - started) / 1000;
  stop = true;
  await Promise.all(workers);
  await pool.close();
  return { requests, seconds, perSecond: requests / seconds, errors, statuses };
}
