/**
 * How sessions reach a device host's runtime: claimed from the deployment's shared queue.
 * The loop registers the host's capacity, then every tick (or as soon as a notification or
 * its own runtime wakes it) heartbeats, follows what other nodes did to its sessions, claims
 * what it can serve now, refills its pool, and now and then sweeps dead hosts and passed
 * deadlines. A host that falls silent for longer than it declared (lost_after_ms) is declared
 * dead by whichever node notices, and its sessions end `lost`; when it hears that, it lets its
 * phones go and joins again as a new host.
 *
 * The phones themselves are the runtime's (runtime.ts), exactly as on the single server.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { randomToken, type RandomSource } from '../secrets.js';
import type { HostStore } from './ports.js';
import type { Runtime } from './runtime.js';
import { messageOf } from '../../src/util/message.js';

export interface HostLoopOptions {
  runtime: Runtime;
  store: HostStore;
  clock: Clock;
  random: RandomSource;
  log: Logger;
  /** The device backend it registers (its phones, boot slots and pool are its runtime's). */
  device: string;
  /** Declared to the deployment: silent for longer than this, the host is dead. */
  lostAfterMs: number;
  /** How often it heartbeats, follows and claims. */
  tickMs: number;
}

export const HOST_DEFAULTS = { lostAfterMs: 15_000, tickMs: 500 } as const;

/**
 * How long (in whole seconds of the session's `created`) a host that would cold-boot a new
 * temporary session leaves it to a host that advertises a warm phone: that host claims on
 * the wake-up, within milliseconds, so this only matters when it cannot (stopped, or its
 * warm phones already handed out since its last heartbeat). Long enough for a warm host
 * whose loop a busy machine holds up for a second or two (one second lost such races in
 * CI), short beside the cold boot it saves: an emulator takes tens of seconds.
 */
const WARM_PREFERENCE_SECONDS = 3;
/** Dead hosts and passed deadlines are looked for this often. */
const SWEEP_MS = 1000;

export class HostLoop {
  /** The host's id in the deployment (a new one each time it joins). */
  id = '';
  private advertised: { url: string; adbHost: string; adbPort: number } | null = null;
  private closed = false;
  private lastSweepMs = 0;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;

  constructor(private readonly o: HostLoopOptions) {}

  private get context(): Record<string, unknown> {
    return { host: this.id };
  }

  /** Joins the deployment as a new host, reached at `advertised`. */
  async register(advertised: { url: string; adbHost: string; adbPort: number }): Promise<void> {
    this.advertised = advertised;
    this.id = `hst_${randomToken(this.o.random, 12)}`;
    const { phones, bootSlots, pool } = this.o.runtime.stats();
    await this.o.store.register(
      {
        id: this.id,
        url: advertised.url,
        adb_host: advertised.adbHost,
        adb_port: advertised.adbPort,
        phones,
        boot_slots: bootSlots,
        device: this.o.device,
        lost_after_ms: this.o.lostAfterMs,
        typical_boot_ms: this.o.runtime.typicalBootMs,
        pool_target: pool.target,
      },
      this.o.clock.now(),
    );
  }

  start(): void {
    this.loop = this.run();
  }

  /** Wakes the loop now (a notification arrived, or the runtime let something go). */
  poke(): void {
    this.wake?.();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      try {
        await this.tick();
        if (failures > 0) this.o.log.info('shared store reachable again', this.context);
        failures = 0;
      } catch (err) {
        failures++;
        // A database restart: phones keep running, ADB keeps relaying; the host retries
        // with backoff and picks up where the committed state says.
        this.o.log.warn('host tick failed', {
          ...this.context,
          error: messageOf(err),
        });
      }
      const wait = failures > 0 ? Math.min(5_000, this.o.tickMs * 2 ** failures) : this.o.tickMs;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  private async tick(): Promise<void> {
    const { runtime, store } = this.o;
    const nowMs = this.o.clock.now();
    const { warm, warming } = runtime.stats().pool;
    const alive = await store.heartbeat(this.id, {
      nowMs,
      typicalBootMs: runtime.typicalBootMs,
      warm,
      warming,
    });
    if (!alive) {
      // Declared dead while we could not heartbeat: our sessions were ended `lost` and
      // their slots freed. Our phones are nobody's now; stop them and join afresh.
      this.o.log.error(
        'this host was declared dead by the deployment; stopping its phones and registering again',
        this.context,
      );
      await runtime.abandon();
      await this.register(this.advertised!);
      return;
    }
    await this.follow();
    await this.claim();
    // After the claim: a slot still free here is one no queued session could use.
    runtime.refillPool();
    if (nowMs - this.lastSweepMs >= SWEEP_MS) {
      this.lastSweepMs = nowMs;
      await store.sweep(nowMs);
    }
  }

  /**
   * Follows what other nodes did to this host's sessions: one ended elsewhere (an API node's
   * DELETE, a passed deadline) is cleaned up here; a revoked ADB is cut. A session placed
   * here that the runtime does not hold (a claim whose answer was lost with the connection)
   * is taken back.
   */
  private async follow(): Promise<void> {
    const { runtime, store } = this.o;
    const held = await store.held(this.id);
    const stored = new Map(held.map((r) => [r.id, r]));
    for (const live of [...runtime.all()]) {
      const r = stored.get(live.row.id);
      if (live.phase.kind === 'closing' || live.phase.kind === 'done') continue;
      // Gone from this host (cleaned up, or the host was declared dead meanwhile): nothing to record.
      if (!r) void runtime.finish(live, 'recorded', { lostProfile: true });
      else if (r.state === 'closing') void runtime.finish(live, 'recorded');
      else if (!r.adb_enabled && live.row.adb_enabled) runtime.revokeAdb(live);
    }
    const unknown = held.filter((r) => !runtime.get(r.id)).map((r) => r.id);
    if (unknown.length > 0) {
      for (const row of await store.sessions(unknown))
        if (!runtime.get(row.id)) runtime.recover(row, Math.floor(this.o.clock.now() / 1000));
      runtime.start();
    }
  }

  /**
   * Takes queued sessions it can serve now, oldest first: temporary sessions, one per pooled
   * phone (warm ones first, then warming boots to adopt), which need no boot slot of their
   * own; then any session while it has a free boot slot. Each hosted session reserves one of
   * `phones`; pooled phones hold only what is left and give way to sessions that need a boot.
   */
  private async claim(): Promise<void> {
    const { runtime } = this.o;
    const { room, pooled, freeSlots } = runtime.claimable();
    if (room <= 0 || this.closed || (pooled === 0 && freeSlots <= 0)) return;
    const nowMs = this.o.clock.now();
    const rows = await this.o.store.claim(this.id, {
      room,
      pooled,
      boot: freeSlots,
      // Whole seconds: at least WARM_PREFERENCE_SECONDS old, whatever the fraction.
      warmAfter: Math.floor(nowMs / 1000) - WARM_PREFERENCE_SECONDS - 1,
      nowMs,
    });
    for (const row of rows) runtime.run(row);
  }

  /** Stops: its sessions end `lost` (their phones go with the host) and it leaves the deployment. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.poke();
    await this.loop;
    // The pool drains: warm phones stop, warming boots are aborted (and stopped if they come up).
    await this.o.runtime.close({ saveProfiles: false });
    await this.o.store.leave(this.id).catch(() => undefined);
  }
}
