/**
 * PostgreSQL notifications between the nodes of a deployment (LISTEN/NOTIFY). Every change a
 * node waits for is announced in the transaction that makes it, so it arrives on commit, and
 * only then: an admitted session (hosts claim it), a change to a host's sessions (the host
 * stops a phone, cuts an ADB relay), a change of a session's state (API nodes answer a long
 * poll or a DELETE).
 *
 * A notification is a wake-up, never the news itself: the woken node reads the committed
 * state. One sent while a listener's connection is down is lost, so every listener also
 * looks on its own now and then (a slow poll), and looks at once when it reconnects.
 */
import pg from 'pg';
import type { Logger } from '../../log.js';

/** Hosts LISTEN here for admitted sessions to claim (payload: none). */
export const QUEUE_CHANNEL = 'phonelease_queue';
/** A host LISTENs here for changes to its sessions (payload: the host id). */
export const HOST_CHANNEL = 'phonelease_host';
/** API nodes LISTEN here for changes of a session's state, placement or cleanup (payload: the session id). */
export const SESSION_CHANNEL = 'phonelease_session';

/** The application_name of listening connections. */
export const LISTENER_APPLICATION = 'phonelease-listener';
const RECONNECT_MS = 250;
const RECONNECT_MAX_MS = 5_000;

export interface ListenerOptions {
  url: string;
  channels: readonly string[];
  onNotification(channel: string, payload: string): void;
  /** Connected (again): whatever was announced while disconnected is lost; look now. */
  onConnected(): void;
  log: Logger;
}

/**
 * One dedicated connection that LISTENs on `channels` (a pooled connection cannot: LISTEN
 * belongs to a session). Re-established with backoff after a database restart.
 */
export class Listener {
  #client: pg.Client | null = null;
  #closed = false;
  #failures = 0;
  #retry: NodeJS.Timeout | null = null;
  #connecting = false;

  constructor(private readonly o: ListenerOptions) {}

  /** True while notifications arrive; otherwise listeners should poll at their fallback pace. */
  get connected(): boolean {
    return this.#client !== null;
  }

  /** Connects once (a failure is retried in the background; meanwhile `connected` is false). */
  async start(): Promise<void> {
    if (this.#closed || this.#connecting) return;
    this.#connecting = true;
    // Named, so an operator can tell it from the pooled connections in pg_stat_activity.
    const c = new pg.Client({ connectionString: this.o.url, application_name: LISTENER_APPLICATION });
    c.on('error', () => undefined);
    c.on('end', () => {
      if (this.#client === c) {
        this.#client = null;
        this.o.log.debug('notification connection lost; polling until it is back');
      }
      this.#scheduleReconnect();
    });
    c.on('notification', (msg) => this.o.onNotification(msg.channel, msg.payload ?? ''));
    try {
      await c.connect();
      for (const channel of this.o.channels) await c.query(`LISTEN ${channel}`);
      if (this.#closed) {
        await c.end().catch(() => undefined);
        return;
      }
      this.#client = c;
      this.#failures = 0;
      this.#connecting = false;
      this.o.onConnected();
    } catch (err) {
      this.o.log.debug('notification connection failed; polling meanwhile', { error: String(err) });
      await c.end().catch(() => undefined);
      this.#connecting = false;
      this.#scheduleReconnect();
    }
  }

  /** One retry at a time, and none while connected or connecting. */
  #scheduleReconnect(): void {
    if (this.#closed || this.#retry || this.#connecting || this.#client) return;
    const wait = Math.min(RECONNECT_MAX_MS, RECONNECT_MS * 2 ** this.#failures++);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.start();
    }, wait);
    this.#retry.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    const c = this.#client;
    this.#client = null;
    await c?.end().catch(() => undefined);
  }
}
