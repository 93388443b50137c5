/**
 * A device host: runs phones for a deployment whose state is in PostgreSQL. It registers
 * its capacity, claims admitted sessions from the queue (`FOR UPDATE SKIP LOCKED`: hosts
 * never wait on each other, and a session goes to exactly one), boots them with the same
 * device backends as the embedded server, marks them ready, bills their minutes, and stops
 * them when any node records their end. It heartbeats all along; a host that falls silent
 * for longer than it declared (lost_after_ms) is declared dead by whichever node notices,
 * and its sessions end `lost`.
 *
 * With a pool (`pool` > 0) it keeps that many temporary phones booted ahead of demand, as the
 * embedded runtime does: within its `phones` (each hosted session reserves one; the pool holds
 * what is left and yields it to a session that needs a boot), refilled in its boot slots once
 * it has claimed what it can serve, stopped when it stops. A claimed temporary session takes a
 * warm phone (ready at once, startup source `pool`) or adopts a warming one's boot. Hosts
 * publish how many warm phones they hold, and a host that would cold-boot a temporary session
 * leaves it, for its first seconds, to a host that has a warm one (see claim()).
 *
 * Clients reach its phones directly: ADB through this host's own gateway (the session's
 * adb object names it), and frames and operations through API nodes, which forward them
 * here signed (node-auth.ts).
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { ERROR_CODES, TapBody, type PhoneOp } from '../../src/api/schemas.js';
import { AdbGateway, type AdbSession, type AdbSessions } from '../adb-gateway.js';
import { baseApp } from '../api/app.js';
import { systemClock, type Clock } from '../clock.js';
import type { DeviceBackend, DevicePhone } from '../devices/types.js';
import { apiError, badRequest, notFound, notReady } from '../errors.js';
import type { Logger } from '../log.js';
import { ProfileSaves } from '../runtime/profile-saves.js';
import type { StartupSource } from '../runtime/rows.js';
import {
  FRAME_INTERVAL_MS,
  newAdbCode,
  nextMinuteStart,
  nextTypicalBootMs,
  startupFailure,
  tapRefusal,
} from '../runtime/rules.js';
import { WarmPool, type PhoneBoot, type PooledPhone } from '../runtime/warm-pool.js';
import { cryptoRandom, randomToken, sha256Hex, type RandomSource } from '../secrets.js';
import { isTransient, migratePg, openPool, sharedSecret, tx, type Db } from '../stores/postgres/pool.js';
import { HostViewerStreams } from './host-viewer.js';
import { NODE_HEADER, NodeSigner } from './node-auth.js';
import { HOST_CHANNEL, Listener, QUEUE_CHANNEL } from './notifications.js';
import {
  billUpTo,
  completeCleanup,
  forgetSavesOn,
  endSession,
  notifySessions,
  one,
  reap,
  type SessionRecord,
} from './shared-sessions.js';

export interface DeviceHostOptions {
  /** PostgreSQL URL of the deployment. */
  store: string;
  /** Interface the host's HTTP server and ADB gateway listen on (default 127.0.0.1). */
  host?: string;
  port?: number;
  /** Phones this host runs at once (its share of the deployment's capacity). */
  phones: number;
  bootSlots: number;
  /** Temporary phones kept booted ahead of demand, within `phones` (default 0: none). */
  pool?: number;
  backend: DeviceBackend;
  /** Profile saves of the sessions this host ran (default: a temp dir removed on close). */
  dataDir?: string;
  /** Declared to the deployment: silent for longer than this, the host is dead (default 15 s). */
  lostAfterMs?: number;
  /** How often it heartbeats, claims and syncs (default 500 ms). */
  tickMs?: number;
  log: Logger;
  clock?: Clock;
  random?: RandomSource;
}

export interface RunningDeviceHost {
  readonly id: string;
  readonly url: string;
  /** Ends its sessions (`lost`: their phones go with the host) and leaves the deployment. */
  close(): Promise<void>;
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

/** A session whose phone this host runs. */
interface Hosted extends AdbSession {
  readonly row: { readonly id: string; adb_code: string | null };
  readonly uid: string;
  readonly profileId: string | null;
  readonly expiresAt: number;
  phase: 'booting' | 'ready' | 'stopping';
  phone: DevicePhone | null;
  /** Aborts its boot (its own, or the pooled one it adopted). */
  abort: AbortController;
  adbEnabled: boolean;
  /** Next second a started minute is due to be debited (metered and ready only). */
  billAt: number | null;
  frame: { png: Buffer; atMs: number } | null;
  capturing: Promise<Buffer> | null;
  stopped: Promise<void> | null;
}

/** An address other machines reach this one by, for a host listening on a wildcard. */
function reachableAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

class DeviceHost extends EventEmitter implements AdbSessions {
  readonly sessions = new Map<string, Hosted>();
  private readonly byCode = new Map<string, string>();
  private readonly clock: Clock;
  private readonly random: RandomSource;
  private readonly saves: ProfileSaves;
  /** Boots under way (sessions' and the pool's); each holds one of `bootSlots`. */
  private booting = 0;
  /** Temporary phones booted ahead of demand (warm-pool.ts), as in the embedded runtime. */
  private readonly pool: WarmPool;
  /** A moving average of what boots take here, published for eta_seconds. */
  private typicalBootMs: number;
  private closed = false;
  private lastReapMs = 0;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  id = '';

  constructor(
    private readonly o: DeviceHostOptions,
    private readonly db: Db,
    dataDir: string,
  ) {
    super();
    this.clock = o.clock ?? systemClock;
    this.random = o.random ?? cryptoRandom;
    this.saves = new ProfileSaves(join(dataDir, 'profiles'));
    this.typicalBootMs = o.backend.typicalBootMs;
    this.pool = new WarmPool({
      target: o.pool ?? 0,
      phones: o.phones,
      startBoot: (id) => this.startBoot(id, async () => null),
      // A pooled phone stopped (its room is free) or was lost: the loop looks again now.
      changed: () => this.poke(),
      clock: this.clock,
      random: this.random,
      log: o.log,
      logContext: () => ({ host: this.id }),
    });
  }

  /** The pool as it stands (for /healthz). */
  poolSize(): { warm: number; warming: number; target: number } {
    return this.pool.counts();
  }

  private nowSec(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  // ---------------------------------------------------------------------------------
  // What the ADB gateway asks

  sessionForAdbCode(code: string): Hosted | null {
    const sid = this.byCode.get(sha256Hex(code));
    const h = sid ? this.sessions.get(sid) : undefined;
    if (!h || h.phase !== 'ready' || !h.adbEnabled || h.expiresAt <= this.nowSec()) return null;
    return h;
  }

  all(): Iterable<Hosted> {
    return this.sessions.values();
  }

  // ---------------------------------------------------------------------------------
  // Membership

  async register(advertised: { url: string; adbHost: string; adbPort: number }): Promise<void> {
    this.id = `hst_${randomToken(this.random, 12)}`;
    const now = this.clock.now();
    await tx(this.db, (c) =>
      c.query(
        `INSERT INTO hosts (id, url, adb_host, adb_port, phones, boot_slots, device, started, heartbeat_ms, lost_after_ms, typical_boot_ms, pool_target, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'live')`,
        [
          this.id,
          advertised.url,
          advertised.adbHost,
          advertised.adbPort,
          this.o.phones,
          this.o.bootSlots,
          this.o.backend.name,
          Math.floor(now / 1000),
          now,
          this.o.lostAfterMs ?? HOST_DEFAULTS.lostAfterMs,
          this.typicalBootMs,
          this.pool.target,
        ],
      ),
    );
  }

  start(): void {
    this.loop = this.run();
  }

  /** Heartbeat, sync, bill, claim, reap; again every tick or as soon as a notification wakes it. */
  private async run(): Promise<void> {
    const tickMs = this.o.tickMs ?? HOST_DEFAULTS.tickMs;
    let failures = 0;
    while (!this.closed) {
      try {
        await this.tick();
        if (failures > 0) this.o.log.info('shared store reachable again', { host: this.id });
        failures = 0;
      } catch (err) {
        failures++;
        // A database restart: phones keep running, ADB keeps relaying; the host retries
        // with backoff and picks up where the committed state says.
        (isTransient(err) || failures > 1 ? this.o.log.warn : this.o.log.error).call(
          this.o.log,
          'host tick failed',
          {
            host: this.id,
            error: err instanceof Error ? err.message : String(err),
          },
        );
      }
      const wait = failures > 0 ? Math.min(5_000, tickMs * 2 ** failures) : tickMs;
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

  /** Wakes the loop now (a notification arrived). */
  poke(): void {
    this.wake?.();
  }

  private async tick(): Promise<void> {
    const nowMs = this.clock.now();
    const pool = this.pool.counts();
    const beat = await this.db.query(
      "UPDATE hosts SET heartbeat_ms = $2, typical_boot_ms = $3, warm = $4, warming = $5 WHERE id = $1 AND state = 'live'",
      [this.id, nowMs, this.typicalBootMs, pool.warm, pool.warming],
    );
    if (beat.rowCount === 0) {
      // Declared dead while we could not heartbeat: our sessions were ended `lost` and
      // their slots freed. Our phones are nobody's now; stop them and rejoin afresh.
      this.o.log.error(
        'this host was declared dead by the deployment; stopping its phones and registering again',
        {
          host: this.id,
        },
      );
      await Promise.all([...this.sessions.values()].map((h) => this.stopLocal(h, { record: false })));
      const { url, adb_host, adb_port } = (await one<{ url: string; adb_host: string; adb_port: number }>(
        this.db,
        'SELECT url, adb_host, adb_port FROM hosts WHERE id = $1',
        [this.id],
      ))!;
      await this.register({ url, adbHost: adb_host, adbPort: adb_port });
      return;
    }
    await this.sync();
    await this.bill();
    await this.claim();
    // After the claim: a slot still free here is one no queued session could use.
    this.refill();
    if (nowMs - this.lastReapMs >= 1000) {
      this.lastReapMs = nowMs;
      await reap(this.db, nowMs, this.o.log);
    }
  }

  /** Stops phones whose sessions ended elsewhere (DELETE on an API node, deadline) and applies ADB revocations. */
  private async sync(): Promise<void> {
    // Sessions ended while this host holds no phone for them (a boot that failed, or ended
    // before it finished): nothing to stop, only the cleanup to confirm.
    const orphans = (
      await this.db.query<{ id: string }>(
        "SELECT id FROM sessions WHERE host_id = $1 AND done = 0 AND state = 'closing' AND NOT (id = ANY($2))",
        [this.id, [...this.sessions.keys()]],
      )
    ).rows;
    for (const { id } of orphans) await this.confirmCleanup(id, { saved: null, lostProfile: false });
    if (this.sessions.size === 0) return;
    const rows = (
      await this.db.query<{
        id: string;
        state: string;
        done: number;
        adb_enabled: number;
        host_id: string | null;
      }>('SELECT id, state, done, adb_enabled, host_id FROM sessions WHERE id = ANY($1)', [
        [...this.sessions.keys()],
      ])
    ).rows;
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const h of this.sessions.values()) {
      const r = byId.get(h.row.id);
      if (!r || r.done === 1 || r.host_id !== this.id || r.state === 'closing') {
        if (h.stopped === null) this.stopInBackground(h, { record: r?.done === 0 && r.host_id === this.id });
      } else if (!r.adb_enabled && h.adbEnabled) {
        h.adbEnabled = false;
        this.emit('adb-revoked', h);
      }
    }
  }

  /** Debits the started minutes of metered sessions as they fall due; credit running out ends the session. */
  private async bill(): Promise<void> {
    const now = this.nowSec();
    for (const h of this.sessions.values()) {
      if (h.phase !== 'ready' || h.billAt === null || h.billAt > now) continue;
      const next = await tx(this.db, async (c) => {
        const row = await one<SessionRecord>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [
          h.row.id,
        ]);
        if (!row || row.state !== 'ready' || row.ready === null) return null;
        const exhaustedAt = await billUpTo(c, row, now);
        if (exhaustedAt !== null) {
          await endSession(c, row.id, 'credit_exhausted', exhaustedAt);
          return null;
        }
        return nextMinuteStart(row);
      });
      h.billAt = next;
    }
  }

  /**
   * Takes queued sessions it can serve now, oldest first, in one transaction:
   * - temporary sessions, one per pooled phone (warm ones first, then warming boots to
   *   adopt), which need no boot slot of their own;
   * - then any session, while it has a free boot slot. A temporary session younger than
   *   WARM_PREFERENCE_SECONDS is left alone here while another live host advertises a warm
   *   phone: that host serves it without a boot.
   * Each hosted session reserves one of `phones`; pooled phones hold only what is left and
   * give way (newest first) to sessions that need a boot, so the pool never refuses work.
   */
  private async claim(): Promise<void> {
    const room = this.o.phones - this.sessions.size;
    if (room <= 0 || this.closed) return;
    const pooled = this.pool.handoutOrder();
    const slots = this.o.bootSlots - this.booting;
    if (pooled.length === 0 && slots <= 0) return;
    const claimed = await tx(this.db, async (c) => {
      const fromPool =
        pooled.length === 0
          ? []
          : (
              await c.query<SessionRecord>(
                "SELECT * FROM sessions WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL AND profile_id IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED",
                [Math.min(room, pooled.length)],
              )
            ).rows;
      const toBoot = Math.min(room - fromPool.length, slots);
      const booted =
        toBoot <= 0
          ? []
          : (
              await c.query<SessionRecord>(
                `SELECT * FROM sessions WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL AND NOT (id = ANY($2))
                   AND (profile_id IS NOT NULL OR created <= $3
                        OR NOT EXISTS (SELECT 1 FROM hosts WHERE state = 'live' AND warm > 0 AND id <> $4))
                   -- A profile whose save is on another live host waits for that host.
                   AND NOT EXISTS (SELECT 1 FROM profiles p JOIN hosts h ON h.id = p.saved_host
                                   WHERE p.id = sessions.profile_id AND p.state = 'stored'
                                     AND h.state = 'live' AND h.id <> $4)
                 ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
                [
                  toBoot,
                  fromPool.map((r) => r.id),
                  // Whole seconds: at least WARM_PREFERENCE_SECONDS old, whatever the fraction.
                  this.nowSec() - WARM_PREFERENCE_SECONDS - 1,
                  this.id,
                ],
              )
            ).rows;
      const rows = [...fromPool, ...booted];
      if (rows.length > 0) {
        const ids = rows.map((r) => r.id);
        await c.query('UPDATE sessions SET host_id = $1, claimed_ms = $3 WHERE id = ANY($2)', [
          this.id,
          ids,
          this.clock.now(),
        ]);
        // Their location moved from queued to booting.
        await notifySessions(c, ids);
      }
      return { fromPool, booted };
    });
    claimed.fromPool.forEach((row, i) => {
      // As it is now: a warming phone may have come up during the transaction, or gone (its
      // boot failed, or it was lost); then this session boots a phone of its own.
      this.host(row, this.pool.take(pooled[i]!.id));
    });
    for (const row of claimed.booted) this.host(row, null);
    // Room for the sessions that boot comes out of the pool, its newest (least warm) first.
    this.pool.shrinkTo(this.o.phones - this.sessions.size);
  }

  // ---------------------------------------------------------------------------------
  // Boots

  /**
   * Starts pooled boots while a slot is free, the pool is short, and there is room. A refill
   * held back after a failed boot needs no timer here: the loop comes back every tick.
   */
  private refill(): void {
    if (!this.closed) this.pool.refill(this.sessions.size, () => this.booting < this.o.bootSlots);
  }

  /**
   * Starts a backend boot in a boot slot (taken now). The slot frees when the boot settles,
   * whoever owns it by then (a session, the pool, or nobody), and what it took feeds
   * eta_seconds.
   */
  private startBoot(name: string, restoreFrom: () => Promise<string | null>): PhoneBoot {
    this.booting++;
    const abort = new AbortController();
    const startedMs = this.clock.now();
    const phone = (async () =>
      this.o.backend.boot({
        sessionId: name,
        restoreFrom: await restoreFrom(),
        signal: abort.signal,
        log: this.o.log,
      }))();
    void phone
      .then(
        () => {
          this.typicalBootMs = nextTypicalBootMs(this.typicalBootMs, this.clock.now() - startedMs);
        },
        () => undefined,
      )
      .finally(() => {
        this.booting--;
        this.poke();
      });
    return { startedMs, abort, phone };
  }

  // ---------------------------------------------------------------------------------
  // A session's phone

  /** Hosts a claimed session: on a pooled phone (warm, or a warming one's boot), or a boot of its own. */
  private host(row: SessionRecord, pooled: PooledPhone | null): void {
    const boot =
      pooled === null
        ? this.startBoot(row.id, () => this.restoreFrom(row.profile_id))
        : pooled.kind === 'warming'
          ? pooled
          : null;
    const h: Hosted = {
      row: { id: row.id, adb_code: null },
      uid: row.uid,
      profileId: row.profile_id,
      expiresAt: row.expires_at,
      phase: 'booting',
      phone: null,
      abort: boot?.abort ?? new AbortController(),
      adbEnabled: true,
      billAt: null,
      frame: null,
      capturing: null,
      stopped: null,
    };
    this.sessions.set(row.id, h);
    const ready =
      pooled?.kind === 'warm'
        ? this.becomeReady(h, pooled.phone, 'pool')
        : boot!.phone.then(
            (phone) => this.becomeReady(h, phone, phone.startupSource ?? this.o.backend.startupSource),
            (err: unknown) => this.bootFailed(h, err),
          );
    ready.catch((err: unknown) =>
      this.o.log.error('boot bookkeeping failed', { session: row.id, error: String(err) }),
    );
  }

  /**
   * What a phone boots from: a profile restores its save while the profile is stored (a
   * reset forgets it) and the save is on this host's disk (the claim brings a profile to
   * the host that holds its save while that host is live); otherwise it starts fresh ('').
   * Temporary phones: null.
   */
  private async restoreFrom(profileId: string | null): Promise<string | null> {
    if (profileId === null) return null;
    const profile = await one<{ state: string; saved_host: string | null }>(
      this.db,
      'SELECT state, saved_host FROM profiles WHERE id = $1',
      [profileId],
    );
    const here = profile?.state === 'stored' && profile.saved_host === this.id;
    return here ? (this.saves.current(profileId) ?? '') : '';
  }

  private async bootFailed(h: Hosted, err: unknown): Promise<void> {
    const sid = h.row.id;
    if (h.phase !== 'booting') return;
    const failure = startupFailure(err);
    this.o.log.error('phone failed to start', { session: sid, error: String(err) });
    this.sessions.delete(sid);
    await tx(this.db, async (c) => {
      await c.query(
        "UPDATE sessions SET state = 'error', failure_code = $3, failure_message = $4 WHERE id = $1 AND host_id = $2 AND done = 0 AND state = 'provisioning'",
        [sid, this.id, failure.code, failure.message],
      );
      await notifySessions(c, [sid]);
    });
  }

  /** The session has its phone (booted for it, or from the pool): it is ready, unless it ended meanwhile. */
  private async becomeReady(h: Hosted, phone: DevicePhone, source: StartupSource): Promise<void> {
    const sid = h.row.id;
    const adbCode = newAdbCode(this.random);
    const now = this.nowSec();
    const row =
      h.phase === 'booting'
        ? await tx(this.db, async (c) => {
            const r = await one<SessionRecord>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [sid]);
            if (!r || r.done === 1 || r.state !== 'provisioning' || r.host_id !== this.id) return null;
            await c.query(
              "UPDATE sessions SET state = 'ready', ready = $2, device = $3, screen_w = $4, screen_h = $5, adb_code = $6, startup_source = $7 WHERE id = $1",
              [sid, now, phone.label, phone.screen.w, phone.screen.h, adbCode, source],
            );
            await notifySessions(c, [sid]);
            return { ...r, ready: now };
          })
        : null;
    if (!row) {
      // Ended while it booted (or the row moved on): the phone is nobody's.
      await phone.shutdown({ saveTo: null }).catch(() => undefined);
      this.sessions.delete(sid);
      return;
    }
    h.phone = phone;
    h.row.adb_code = adbCode;
    h.adbEnabled = row.adb_enabled === 1;
    h.phase = 'ready';
    h.billAt = row.billing_mode === 'metered' ? now + 1 : null;
    this.byCode.set(sha256Hex(adbCode), sid);
    phone.onLost((reason) => {
      this.o.log.warn('phone lost', { session: sid, reason });
      void tx(this.db, (c) => endSession(c, sid, 'lost', this.nowSec()))
        .then(() => this.stopLocal(h, { record: true, lostProfile: true }))
        .catch((err: unknown) =>
          this.o.log.error('could not record a lost phone', { session: sid, error: String(err) }),
        );
    });
    this.o.log.info('phone ready', { session: sid, host: this.id });
  }

  /** stopLocal from the loop: a failure is logged, and the next sync tries again. */
  private stopInBackground(h: Hosted, opts: { record: boolean }): void {
    this.stopLocal(h, opts).catch((err: unknown) => {
      this.o.log.warn('could not confirm a cleanup yet; retrying', { session: h.row.id, error: String(err) });
      h.stopped = null;
    });
  }

  /**
   * Stops a session's phone (saving a profile phone) and, with `record`, confirms its
   * cleanup in the store. Idempotent: later calls join the first (a failed one is retried
   * by the next sync, which finds the phone already stopped).
   */
  private stopLocal(h: Hosted, opts: { record: boolean; lostProfile?: boolean }): Promise<void> {
    h.stopped ??= (async () => {
      const sid = h.row.id;
      const wasBooting = h.phase === 'booting';
      if (h.phase !== 'stopping') {
        h.phase = 'stopping';
        this.emit('closing', h);
      }
      if (h.row.adb_code) this.byCode.delete(sha256Hex(h.row.adb_code));
      if (wasBooting) h.abort.abort(new Error('session ended'));
      let staged: string | null = null;
      // Stopped once: a retried confirmation finds it gone.
      const phone = h.phone;
      h.phone = null;
      try {
        if (phone) {
          if (h.profileId !== null && opts.record && !opts.lostProfile)
            staged = this.saves.stage(h.profileId, sid);
          await phone.shutdown({ saveTo: staged });
        }
      } catch (err) {
        this.o.log.error('phone did not stop cleanly', { session: sid, error: String(err) });
        if (staged) this.saves.discard(staged);
        staged = null;
        await phone?.shutdown({ saveTo: null }).catch(() => undefined);
      }
      if (opts.record) {
        await this.confirmCleanup(sid, {
          saved: staged !== null && h.profileId !== null ? { profileId: h.profileId, staged } : null,
          lostProfile: opts.lostProfile ?? false,
        });
      } else if (staged) this.saves.discard(staged);
      if (this.sessions.get(sid) === h) this.sessions.delete(sid);
      this.poke();
    })();
    return h.stopped;
  }

  /**
   * Confirms a session's cleanup (its end recorded first if nobody had): it moves to history
   * and lets go of its profile, whose staged save commits with it. Only while this host
   * still holds it.
   */
  private async confirmCleanup(
    sid: string,
    opts: { saved: { profileId: string; staged: string } | null; lostProfile: boolean },
  ): Promise<void> {
    const { saved } = opts;
    const confirmed = await tx(this.db, async (c) => {
      const row = await one<SessionRecord>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [sid]);
      if (!row || row.done === 1 || row.host_id !== this.id) return false;
      if (row.state !== 'closing') await endSession(c, sid, 'lost', this.nowSec());
      const current = (await one<SessionRecord>(c, 'SELECT * FROM sessions WHERE id = $1', [sid]))!;
      if (current.done === 1) return false;
      if (saved) this.saves.commit(saved.profileId, saved.staged);
      await completeCleanup(c, current, {
        savedOn: saved !== null ? this.id : null,
        lostProfile: opts.lostProfile,
        nowSec: this.nowSec(),
      });
      return true;
    }).catch((err: unknown) => {
      if (saved) this.saves.discard(saved.staged);
      throw err;
    });
    // Someone else finished it (the host was declared dead meanwhile): the save is nobody's.
    if (!confirmed && saved) this.saves.discard(saved.staged);
  }

  // ---------------------------------------------------------------------------------
  // Frames and operations for API nodes

  ready(sid: string): { h: Hosted; phone: DevicePhone } {
    const h = this.sessions.get(sid);
    if (!h) throw notFound();
    if (h.phase !== 'ready' || !h.phone)
      throw notReady(h.phase === 'stopping' ? 'closing' : 'provisioning', sid);
    return { h, phone: h.phone };
  }

  /**
   * Applies a stored ADB revocation now: an API node asks before it answers the owner, so
   * that no relay outlives the answer (sync() applies it too, for a node that could not ask).
   */
  revokeAdb(sid: string): void {
    const h = this.sessions.get(sid);
    if (!h?.adbEnabled) return;
    h.adbEnabled = false;
    this.emit('adb-revoked', h);
  }

  /** At most one capture per FRAME_INTERVAL_MS per phone, as the embedded runtime. */
  frame(sid: string): Promise<Buffer> {
    const { h, phone } = this.ready(sid);
    const now = this.clock.now();
    if (h.frame && now - h.frame.atMs < FRAME_INTERVAL_MS) return Promise.resolve(h.frame.png);
    h.capturing ??= phone
      .capture()
      .then((png) => {
        h.frame = { png, atMs: this.clock.now() };
        return png;
      })
      .catch((err: unknown) => {
        this.o.log.warn('capture failed', { session: sid, error: String(err) });
        if (h.frame) return h.frame.png;
        throw apiError(ERROR_CODES.noFrame, 'No frame is available yet; retry in a few seconds.');
      })
      .finally(() => (h.capturing = null));
    return h.capturing;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.poke();
    await this.loop;
    // The pool drains: warm phones stop, warming boots are aborted (and stopped if they come up).
    const drained = this.pool.drain('the host is stopping');
    const now = this.nowSec();
    await Promise.all(
      [...this.sessions.values()].map(async (h) => {
        await tx(this.db, (c) => endSession(c, h.row.id, 'lost', now)).catch(() => undefined);
        await this.stopLocal(h, { record: true, lostProfile: true }).catch(() => undefined);
      }),
    );
    await drained;
    // A host that comes back registers anew: the saves on this disk are nobody's then.
    await tx(this.db, async (c) => {
      await c.query("UPDATE hosts SET state = 'stopped' WHERE id = $1", [this.id]);
      await forgetSavesOn(c, [this.id]);
    }).catch(() => undefined);
  }
}

export async function startDeviceHost(options: DeviceHostOptions): Promise<RunningDeviceHost> {
  const { log } = options;
  const listenHost = options.host ?? '127.0.0.1';
  const ephemeral = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'phonelease-host-'));
  const db = openPool(options.store, log, 10);
  const cleanupStart = async () => {
    await options.backend.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    if (ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  let secret: Buffer;
  try {
    await migratePg(db);
    secret = await sharedSecret(db, options.random ?? cryptoRandom);
  } catch (err) {
    await cleanupStart();
    throw err;
  }
  const signer = new NodeSigner(secret);
  const host = new DeviceHost(options, db, dataDir);
  const gateway = new AdbGateway(host, log, options.clock);

  // The host's HTTP side: frames and operations for API nodes, each request signed.
  const { app } = baseApp(
    { directory: { authenticate: () => null }, grants: { viewGrantSession: () => null } },
    log,
  );
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.routeOptions.url === '/healthz') return done();
    const path = req.url.split('?')[0] ?? '';
    if (!signer.verify(req.headers[NODE_HEADER] as string | undefined, req.method, path)) {
      return done(
        apiError(
          ERROR_CODES.unauthenticated,
          'Only the API nodes of this deployment may call a device host.',
        ),
      );
    }
    done();
  });
  // Live viewer streams, relayed here by API nodes (host-viewer.ts).
  const streams = new HostViewerStreams({
    phones: host,
    signer,
    db,
    clock: options.clock ?? systemClock,
    log,
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  const SidParams = Type.Object({ sid: Type.String() });
  app.get('/healthz', { config: { auth: 'public' } }, async () => ({
    host: host.id,
    phones: host.sessions.size,
    pool: host.poolSize(),
  }));
  app.get(
    '/internal/sessions/:sid/frame.png',
    { config: { auth: 'public' }, schema: { params: SidParams } },
    async (req, reply) => reply.header('content-type', 'image/png').send(await host.frame(req.params.sid)),
  );
  app.post(
    '/internal/sessions/:sid/adb/revoke',
    { config: { auth: 'public' }, schema: { params: SidParams } },
    async (req) => {
      host.revokeAdb(req.params.sid);
      return { revoked: true };
    },
  );
  app.post(
    '/internal/sessions/:sid/ops/input.tap',
    { config: { auth: 'public' }, schema: { params: SidParams, body: TapBody } },
    async (req) => {
      const { phone } = host.ready(req.params.sid);
      const { x, y } = req.body;
      const refusal = tapRefusal(x, y, phone.screen);
      if (refusal) throw badRequest(refusal);
      await phone.input({ type: 'tap', x, y });
      return { ok: true };
    },
  );
  app.post(
    '/internal/sessions/:sid/ops/:op',
    {
      config: { auth: 'public' },
      schema: { params: Type.Object({ sid: Type.String(), op: Type.String() }) },
    },
    async (req, reply) => {
      const { phone } = host.ready(req.params.sid);
      switch (req.params.op as PhoneOp) {
        case 'screen.capture':
          return reply.header('content-type', 'image/png').send(await host.frame(req.params.sid));
        case 'screen.bounds':
          return { w: phone.screen.w, h: phone.screen.h };
        case 'nav.home':
          await phone.input({ type: 'key', key: 'home' });
          return { ok: true };
        case 'apps.list':
          return phone.apps();
        default:
          throw notFound(`Unknown operation "${req.params.op}".`);
      }
    },
  );

  // Wake-ups: a session admitted anywhere (claim it), or a change to one of ours.
  const listener = new Listener({
    url: options.store,
    channels: [QUEUE_CHANNEL, HOST_CHANNEL],
    onNotification: (channel, payload) => {
      if (channel === QUEUE_CHANNEL || payload === host.id) host.poke();
    },
    onConnected: () => host.poke(),
    log,
  });
  let url = '';
  try {
    const adbPort = await gateway.listen(listenHost, 0);
    await app.listen({ host: listenHost, port: options.port ?? 0 });
    const { port } = app.server.address() as AddressInfo;
    const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
    const advertised = wildcard ? reachableAddress() : listenHost;
    url = `http://${advertised.includes(':') ? `[${advertised}]` : advertised}:${port}`;
    await host.register({ url, adbHost: advertised, adbPort });
    await listener.start();
    host.start();
    log.info('device host registered', {
      host: host.id,
      url,
      adb_gateway_port: adbPort,
      phones: options.phones,
      pool: Math.min(options.pool ?? 0, options.phones),
    });
  } catch (err) {
    await listener.close();
    await app.close().catch(() => undefined);
    await gateway.close().catch(() => undefined);
    await cleanupStart();
    throw err;
  }

  let closing: Promise<void> | null = null;
  return {
    id: host.id,
    url,
    close() {
      closing ??= (async () => {
        await host.close();
        await listener.close();
        streams.close();
        await app.close();
        await gateway.close();
        await cleanupStart();
      })();
      return closing;
    },
  };
}
