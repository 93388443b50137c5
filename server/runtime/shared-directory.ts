/**
 * An API node's session directory: the sessions of a deployment, in its shared store, their
 * phones on the device hosts that claimed them. Any number of API nodes answer for the same
 * sessions; none keeps anything of its own that a client depends on. Admission is decided
 * here (admission.ts) on facts the store reads under the account's lock; what needs the phone
 * itself (its frame, input, apps) is asked of its host (RemotePhones); ADB goes straight to
 * that host's gateway, which the session's adb object names.
 */
import type { CreateSessionBody } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { nowSec } from '../clock.js';
import { notFound, notReady, profileHeld } from '../errors.js';
import { sha256Hex, type RandomSource } from '../secrets.js';
import { newKey } from './accounts.js';
import { admissionVerdict } from './admission.js';
import type { SessionChanges } from './directory.js';
import {
  type AccountSummary,
  type Admission,
  type PhoneAccess,
  type Reader,
  type SessionDirectory,
  type SessionSnapshot,
} from './directory.js';
import type { PlacedRow, RemotePhones, SharedStore } from './ports.js';
import type { KeyRow, SessionRow } from './rows.js';
import { bootingEtaSeconds, canonicalJson, hostSlots, newSessionId, queuedEtaSeconds } from './rules.js';

export interface SharedDirectoryOptions {
  store: SharedStore;
  phones: RemotePhones;
  /** Woken by the shared store's notifications of changes (SESSION_CHANNEL). */
  changes: SessionChanges;
  clock: Clock;
  random: RandomSource;
}

export class SharedDirectory implements SessionDirectory<SessionSnapshot<PlacedRow>> {
  constructor(private readonly o: SharedDirectoryOptions) {}

  /** A session as read, with what a reader is shown of it. */
  private async snapshot(row: PlacedRow): Promise<SessionSnapshot<PlacedRow>> {
    return {
      row,
      activityMs: row.last * 1000,
      // As the contract defines them: queued only while every boot slot is busy. A session a
      // host has not claimed yet but will at once (a slot is free) is already booting.
      location:
        row.state === 'provisioning' ? (row.host_id === null && !row.slot_free ? 'queued' : 'booting') : null,
      startupSource: row.startup_source,
      ...(row.adb_host !== null && row.adb_port !== null
        ? { adbEndpoint: { host: row.adb_host, port: row.adb_port } }
        : {}),
      ...(row.state === 'provisioning' ? { etaSeconds: await this.eta_(row) } : {}),
    };
  }

  /**
   * eta_seconds with the single server's queue model over the live hosts: a session a host
   * has claimed is booting there (what is left of that host's typical boot since the claim);
   * a queued one waits behind the sessions queued before it (by seq) for the hosts' pooled
   * phones and boot slots.
   */
  private async eta_(row: PlacedRow): Promise<number> {
    const nowMs = this.o.clock.now();
    const typicalMs = Number(row.typical_boot_ms);
    if (row.host_id !== null)
      return bootingEtaSeconds(typicalMs, row.claimed_ms === null ? 0 : nowMs - Number(row.claimed_ms));
    const q = await this.o.store.queuePosition(row.seq);
    const { slots, pooled } = hostSlots(q.hosts, nowMs);
    const eta = queuedEtaSeconds({
      temporary: row.profile_id === null,
      ahead: Number(q.ahead),
      temporaryAhead: Number(q.temporary),
      pooledReadyInMs: pooled,
      slots,
    });
    // No live host with room: a typical boot after one more (a guess until one has room).
    return eta ?? Math.max(1, Math.ceil((2 * typicalMs) / 1000));
  }

  private async read(
    sid: string,
    opts: { any?: boolean } = {},
  ): Promise<SessionSnapshot<PlacedRow> | undefined> {
    const row = await this.o.store.placed(sid, opts);
    return row ? this.snapshot(row) : undefined;
  }

  // ---------------------------------------------------------------------------------
  // Credentials

  authenticate(rawKey: string): Promise<string | null> {
    // Every lookup asks the store, so a revocation holds on every node at once.
    return this.o.store.keyOwner(sha256Hex(rawKey));
  }

  // ---------------------------------------------------------------------------------
  // Sessions

  async admit(
    uid: string,
    body: CreateSessionBody,
    requestKey: string | null,
  ): Promise<Admission<SessionSnapshot<PlacedRow>>> {
    const nowMs = this.o.clock.now();
    const bodyHash = sha256Hex(canonicalJson(body));
    const { outcome, id } = await this.o.store.admit(
      { uid, requestKey, bodyHash, wantsProfile: body.profile_id !== undefined },
      (facts) =>
        admissionVerdict(
          {
            body,
            bodyHash,
            requestKey,
            nowMs,
            ...facts,
            // Capacity is decided once everything else passed, under the capacity lock.
            ...(facts.capacity ?? { liveSessions: 0, phones: 1, retryAfterSeconds: () => 1 }),
          },
          // seq: numbered by the insert.
          { uid, id: () => newSessionId(this.o.random), seq: () => 0 },
        ),
    );
    // As stored now, with its host: a replay of a session that is ready names its gateway.
    const session = await this.read(id, { any: true });
    if (!session) throw notFound();
    return { outcome, session };
  }

  async session(
    reader: Reader,
    sid: string,
    opts: { touch?: boolean } = {},
  ): Promise<SessionSnapshot<PlacedRow>> {
    const row = await this.o.store.placed(sid);
    if (!row || (reader.kind === 'owner' && row.uid !== reader.uid)) throw notFound();
    // idle_s counts from the last API activity; recorded at most once a second per session.
    const now = nowSec(this.o.clock);
    if (opts.touch && row.last < now) {
      await this.o.store.touch(row.id, now);
      row.last = now;
    }
    return this.snapshot(row);
  }

  async find(sid: string): Promise<SessionSnapshot<PlacedRow> | null> {
    return (await this.read(sid)) ?? null;
  }

  async list(uid: string): Promise<SessionSnapshot<PlacedRow>[]> {
    return Promise.all((await this.o.store.placedOf(uid)).map((row) => this.snapshot(row)));
  }

  changed(
    session: SessionSnapshot<PlacedRow>,
    ms: number,
    signal: AbortSignal,
  ): Promise<SessionSnapshot<PlacedRow>> {
    // Re-read on each change its commit announces, until state, placement or cleanup changed.
    return this.o.changes.untilChanged(session, ms, signal, (sid) => this.read(sid, { any: true }));
  }

  eta(session: SessionSnapshot<PlacedRow>): number | undefined {
    return session.etaSeconds;
  }

  async end(uid: string, sid: string): Promise<{ released: boolean }> {
    const session = await this.session({ kind: 'owner', uid }, sid);
    await this.o.store.end(session.row.id, 'released', nowSec(this.o.clock));
    // The host confirms the cleanup; its commit announces it.
    return { released: await this.o.changes.untilCleanedUp(sid, () => this.o.store.cleanedUp(sid)) };
  }

  receipt(uid: string, requestKey: string): Promise<SessionRow | undefined> {
    return this.o.store.receipt(uid, requestKey);
  }

  async revokeAdb(session: SessionSnapshot<PlacedRow>): Promise<void> {
    await this.o.store.revokeAdb(session.row.id, session.row.host_id);
    // Cut the open relays before answering, as the single server does. A host that does not
    // answer soon still applies the stored revocation when it hears of it, so the answer does
    // not wait out an unreachable host (RemotePhones bounds the wait).
    if (session.row.state === 'ready' && session.row.host_url !== null)
      await this.o.phones.revokeAdb(session.row.host_url, session.row.id).catch(() => undefined);
  }

  phone(session: SessionSnapshot<PlacedRow>): PhoneAccess {
    const { row } = session;
    const hostUrl = row.host_url;
    if (row.state !== 'ready' || hostUrl === null || row.screen_w === null || row.screen_h === null)
      throw notReady(row.state, row.id);
    const { phones } = this.o;
    return {
      screen: { w: row.screen_w, h: row.screen_h },
      frame: () => phones.frame(hostUrl, row.id),
      input: (event) => phones.input(hostUrl, row.id, event),
      apps: () => phones.apps(hostUrl, row.id),
    };
  }

  // ---------------------------------------------------------------------------------
  // The account

  account(uid: string): Promise<AccountSummary> {
    return this.o.store.account(uid);
  }

  async createKey(uid: string, label: string): Promise<{ key: string; row: KeyRow }> {
    const created = newKey(this.o.clock, this.o.random, uid, label);
    await this.o.store.insertKey(created.row);
    return created;
  }

  keys(uid: string): Promise<KeyRow[]> {
    return this.o.store.activeKeys(uid);
  }

  revokeKey(uid: string, keyHash: string): Promise<boolean> {
    return this.o.store.revokeKey(uid, keyHash, nowSec(this.o.clock));
  }

  resetProfile(uid: string): Promise<string> {
    return this.o.store.resetProfile(uid, nowSec(this.o.clock), (holder) =>
      profileHeld(holder, 'end that session, then reset'),
    );
  }

  history(uid: string, limit: number, after?: { created: number; id: string }): Promise<SessionRow[]> {
    return this.o.store.history(uid, limit, after);
  }

  /** The shared store commits each change before it answers. */
  get uncommitted(): null {
    return null;
  }
}
