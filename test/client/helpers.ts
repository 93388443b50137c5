/**
 * Shared pieces of the client tests: lease options against a test server that keep the
 * ledger in a temporary directory and record what the lease logged.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import type { LeaseOptions, PhoneleaseLogger } from '../../src/index.js';
import type { TestServer } from '../support/server.js';

export interface RecordingLogger extends PhoneleaseLogger {
  lines: string[];
}

export function recordingLogger(): RecordingLogger {
  const lines: string[] = [];
  return {
    lines,
    info: (m) => void lines.push(`info ${m}`),
    warn: (m) => void lines.push(`warn ${m}`),
    debug: (m) => void lines.push(`debug ${m}`),
  };
}

export const tempDir = (prefix = 'phonelease-test-'): string => mkdtempSync(join(tmpdir(), prefix));

/** Options for leasePhone() against `t`: its account, a private ledger, no reaper or signal handlers. */
export function leaseOptions(
  t: TestServer,
  extra: LeaseOptions = {},
): LeaseOptions & { logger: RecordingLogger } {
  return {
    baseUrl: t.url,
    apiKey: t.account.key,
    logger: recordingLogger(),
    ledger: { dir: tempDir('phonelease-ledger-') },
    reaper: false,
    handleSignals: false,
    ...extra,
  } as LeaseOptions & { logger: RecordingLogger };
}

/** Live session ids of the test server's account. */
export async function liveIds(t: TestServer): Promise<string[]> {
  const r = await t.api.get('/sessions');
  return (r.body as Array<{ id: string }>).map((s) => s.id);
}

/** Polls until `check` holds (or throws after timeoutMs with the last value). */
export async function eventually<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > until)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TCP proxy in front of the server that can drop the connection of the next
 * `POST /sessions` after the server answered it, before the answer reaches the client:
 * the create happened, the client never hears about it.
 */
export class CutProxy {
  private armed = 0;
  /** Creates whose answer was dropped. */
  cut = 0;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(targetUrl: string): Promise<CutProxy> {
    const u = new URL(targetUrl);
    const proxy = new CutProxy({ host: u.hostname, port: Number(u.port) });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', () => resolve()));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Drop the answer of the next `n` creates. */
  cutNextCreates(n = 1): void {
    this.armed += n;
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    let lastRequest = '';
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (/^[A-Z]+ \//.test(text)) lastRequest = text.slice(0, text.indexOf('\r\n'));
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.armed > 0 && lastRequest.startsWith('POST /sessions ')) {
        this.armed--;
        this.cut++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
