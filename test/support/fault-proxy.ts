/**
 * A fault-injecting HTTP proxy for tests: the kind of thing that sits between CI and a real
 * service (nginx, a CDN's rate limiter, a corporate proxy), started per test on port 0 in
 * front of the real server. Every fault can be forced (by method, path, count or time), or
 * drawn at random from a seeded generator, and everything the proxy did is logged so tests
 * can assert on what really happened on the wire.
 *
 *   const proxy = await FaultProxy.start(server.url, { seed: 7 });
 *   proxy.force('html_429', { method: 'DELETE', forMs: 5000 });
 *   proxy.random(0.15); // 15% of requests get one fault of any kind
 *
 * Faults, and whether the upstream saw the request:
 * - json_500: the upstream answered; the client gets the API's own 500 body (code internal).
 * - html_502, html_504: the upstream answered; the client gets an nginx error page.
 * - html_429 (no Retry-After), html_429_retry_after, json_429: a rate limiter refuses the
 *   request; the upstream never sees it.
 * - drop: the upstream answered; the connection is cut before a byte of the answer.
 * - delay: the request is held for a while, then forwarded and answered normally.
 */
import http from 'node:http';
import type net from 'node:net';

export const FAULT_KINDS = [
  'json_500',
  'html_502',
  'html_504',
  'html_429',
  'html_429_retry_after',
  'json_429',
  'drop',
  'delay',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults answered by the proxy alone: the upstream never sees these requests. */
const REFUSALS: ReadonlySet<FaultKind> = new Set(['html_429', 'html_429_retry_after', 'json_429']);

export interface FaultMatch {
  /** Only requests with this method. */
  method?: string;
  /** Only requests whose path (query included) matches. */
  path?: RegExp;
  /** Only this many requests (default: every matching one). */
  times?: number;
  /** Only for this long from now, in ms. */
  forMs?: number;
}

interface ForcedRule {
  fault: FaultKind;
  method: string | undefined;
  path: RegExp | undefined;
  left: number;
  until: number;
}

export interface FaultLogEntry {
  /** Order of arrival. */
  seq: number;
  method: string;
  /** Path and query. */
  path: string;
  /** The create's Idempotency-Key, if any. */
  idempotencyKey: string | null;
  fault: FaultKind | null;
  /** Whether the fault was forced (false: drawn at random). */
  forced: boolean;
  /** ms since the epoch: when the request arrived, and when the client got its answer (or the cut). */
  arrivedAt: number;
  answeredAt: number;
  /** What the server answered, or null when the request never reached it. */
  upstreamStatus: number | null;
  /** What the client got, or null when the connection was cut. */
  status: number | null;
  /** The Retry-After the client got, if any. */
  retryAfter: string | null;
}

export interface FaultProxyOptions {
  /** Seed of the random faults (default 1): a run can be replayed with the same seed. */
  seed?: number;
  /** Retry-After of html_429_retry_after and json_429, in seconds (default 1). */
  retryAfterSeconds?: number;
  /** How long a `delay` holds a request, in ms: drawn between min and max (default 100-600). */
  delayMs?: { min: number; max: number };
}

/** mulberry32: a small seeded generator, enough to make a fault sequence replayable. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const nginxPage = (status: number, reason: string): string =>
  `<html>\r\n<head><title>${status} ${reason}</title></head>\r\n<body>\r\n<center><h1>${status} ${reason}</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n`;

/** Hop-by-hop headers: they describe one connection and are never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
]);

export class FaultProxy {
  readonly seed: number;
  readonly #server: http.Server;
  readonly #target: URL;
  readonly #sockets = new Set<net.Socket>();
  readonly #random: () => number;
  readonly #forced: ForcedRule[] = [];
  readonly #log: FaultLogEntry[] = [];
  readonly #retryAfter: string;
  readonly #delay: { min: number; max: number };
  #rate = 0;
  #kinds: readonly FaultKind[] = FAULT_KINDS;

  private constructor(target: string, options: FaultProxyOptions) {
    this.#target = new URL(target);
    this.seed = options.seed ?? 1;
    this.#random = seeded(this.seed);
    this.#retryAfter = String(options.retryAfterSeconds ?? 1);
    this.#delay = options.delayMs ?? { min: 100, max: 600 };
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(target: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
    const proxy = new FaultProxy(target, options);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }

  /** Everything the proxy did, in order of arrival. */
  get log(): readonly FaultLogEntry[] {
    return this.#log;
  }

  /** Forces `fault` on matching requests; the first matching rule wins. Returns a function that lifts it. */
  force(fault: FaultKind, match: FaultMatch = {}): () => void {
    const rule: ForcedRule = {
      fault,
      method: match.method?.toUpperCase(),
      path: match.path,
      left: match.times ?? Infinity,
      until: match.forMs === undefined ? Infinity : Date.now() + match.forMs,
    };
    this.#forced.push(rule);
    return () => {
      rule.left = 0;
    };
  }

  /** Gives each request not forced a fault with probability `rate`, of a kind drawn from `kinds`. */
  random(rate: number, kinds: readonly FaultKind[] = FAULT_KINDS): void {
    this.#rate = rate;
    this.#kinds = kinds;
  }

  /** Lifts every forced fault and the random mode. */
  clear(): void {
    for (const rule of this.#forced) rule.left = 0;
    this.#rate = 0;
  }

  async close(): Promise<void> {
    this.clear();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #pick(method: string, path: string): { fault: FaultKind | null; forced: boolean } {
    const now = Date.now();
    for (const rule of this.#forced) {
      if (rule.left <= 0 || now > rule.until) continue;
      if (rule.method && rule.method !== method) continue;
      if (rule.path && !rule.path.test(path)) continue;
      rule.left--;
      return { fault: rule.fault, forced: true };
    }
    // Two draws per request whatever the outcome, so one request's fault does not shift the next's.
    const hit = this.#random();
    const kind = this.#kinds[Math.floor(this.#random() * this.#kinds.length)] ?? null;
    return { fault: hit < this.#rate ? kind : null, forced: false };
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const key = req.headers['idempotency-key'];
    const entry: FaultLogEntry = {
      seq: this.#log.length,
      method,
      path,
      idempotencyKey: typeof key === 'string' ? key : null,
      ...this.#pick(method, path),
      arrivedAt: Date.now(),
      answeredAt: 0,
      upstreamStatus: null,
      status: null,
      retryAfter: null,
    };
    this.#log.push(entry);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);

    const answer = (status: number, headers: http.OutgoingHttpHeaders, payload: Buffer | string): void => {
      entry.status = status;
      entry.retryAfter = typeof headers['retry-after'] === 'string' ? headers['retry-after'] : null;
      entry.answeredAt = Date.now();
      res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
    };
    const html = { 'content-type': 'text/html' };
    const limited = { ...html, 'retry-after': this.#retryAfter };

    switch (entry.fault) {
      case 'html_429':
        return answer(429, html, nginxPage(429, 'Too Many Requests'));
      case 'html_429_retry_after':
        return answer(429, limited, nginxPage(429, 'Too Many Requests'));
      case 'json_429':
        return answer(
          429,
          { 'content-type': 'application/json', 'retry-after': this.#retryAfter },
          JSON.stringify({ message: 'API rate limit exceeded' }),
        );
      case 'delay': {
        const { min, max } = this.#delay;
        await new Promise((resolve) => setTimeout(resolve, min + (max - min) * this.#random()));
        break;
      }
      default:
        break;
    }
    if (entry.fault && REFUSALS.has(entry.fault)) return;

    let upstream: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
    try {
      upstream = await this.#forward(req, body);
    } catch {
      // The upstream is gone: answer as a proxy does.
      return answer(502, html, nginxPage(502, 'Bad Gateway'));
    }
    entry.upstreamStatus = upstream.status;
    switch (entry.fault) {
      case 'json_500':
        return answer(
          500,
          { 'content-type': 'application/json' },
          JSON.stringify({
            error: 'Unexpected service error; retry, and report it if it persists.',
            code: 'internal',
          }),
        );
      case 'html_502':
        return answer(502, html, nginxPage(502, 'Bad Gateway'));
      case 'html_504':
        return answer(504, html, nginxPage(504, 'Gateway Time-out'));
      case 'drop':
        entry.answeredAt = Date.now();
        req.socket.destroy();
        return;
      default: {
        const headers: http.OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(upstream.headers))
          if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
        return answer(upstream.status, headers, upstream.body);
      }
    }
  }

  #forward(
    req: http.IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'host') headers[name] = value;
    headers.host = this.#target.host;
    if (body.length > 0) headers['content-length'] = body.length;
    return new Promise((resolve, reject) => {
      const out = http.request(
        {
          host: this.#target.hostname,
          port: this.#target.port,
          method: req.method,
          path: req.url,
          headers,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }
}
