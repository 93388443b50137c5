/**
 * A model-based test of the single server's runtime and session directory: fast-check plays
 * random sequences of creates (with and without idempotency keys, replays, reused keys),
 * ends, ADB revocations, clock ticks that pass deadlines, pauses of the runtime (creates are
 * recorded, phones wait queued) and kill -9 restarts against the real runtime over a real
 * SQLite store
 * with instant fake phones and a warm pool. A small model says what each call must answer; after every
 * step the live sessions must match the model and the books must agree (audit.ts).
 *
 * On failure fast-check prints the seed and the path of the shrunk sequence; replay one
 * with MODEL_SEED=<seed> MODEL_PATH=<path>.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import type { LiveSession } from '../../server/runtime/runtime.js';
import { auditBooks } from '../../server/stores/sqlite/audit.js';
import { RuntimeWorld } from '../support/runtime-world.js';

const PHONES = 4;
const POOL = 2;
const KEYS = ['key-aaaaaaaaaaaaaaaa', 'key-bbbbbbbbbbbbbbbb', 'key-cccccccccccccccc'];
const TIMEOUTS = [60, 120, 600];

interface AccountModel {
  uid: string;
  limit: number;
}

interface SessionModel {
  sid: string;
  uid: string;
  expiresAt: number;
  /** null while live. */
  endReason: 'released' | 'expired' | 'lost' | null;
  /** While live: queued (the runtime is paused) or ready. */
  phase: 'queued' | 'ready';
  adb: boolean;
}

interface Model {
  nowMs: number;
  paused: boolean;
  accounts: AccountModel[];
  sessions: SessionModel[];
  /** `${uid}/${key}` -> the session and the body it was created with. */
  receipts: Map<string, { sid: string; timeout: number }>;
}

interface Real {
  world: RuntimeWorld;
  opening: Map<string, number>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

const liveOf = (m: Model, uid?: string) =>
  m.sessions.filter((s) => s.endReason === null && (uid === undefined || s.uid === uid));

async function codeOf(fn: () => Promise<unknown>): Promise<{ ok: unknown } | { code: string }> {
  try {
    return { ok: await fn() };
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code };
    throw err;
  }
}

/** After every step: the runtime's live sessions are the model's, and the books agree. */
function checkAgreement(m: Model, r: Real): void {
  const { world } = r;
  for (const a of m.accounts) {
    const real = world.runtime
      .list(a.uid)
      .map((l) => l.row.id)
      .sort();
    const model = liveOf(m, a.uid)
      .map((s) => s.sid)
      .sort();
    expect(real, `live sessions of ${a.uid}`).toEqual(model);
    for (const live of world.runtime.list(a.uid)) {
      const s = m.sessions.find((x) => x.sid === live.row.id)!;
      expect({ sid: s.sid, phase: live.phase.kind }).toEqual({ sid: s.sid, phase: s.phase });
    }
  }
  for (const s of m.sessions) {
    if (s.endReason === null) continue;
    const row = world.store.session(s.sid)!;
    expect({ sid: s.sid, done: row.done, end_reason: row.end_reason }).toEqual({
      sid: s.sid,
      done: 1,
      end_reason: s.endReason,
    });
  }
  expect(auditBooks(world.store.db, r.opening)).toEqual([]);
  // The pool: never more phones than the server has, never one phone in two sessions, and
  // (while the runtime is available; phones boot at once here) full to what sessions leave.
  expect(world.backend.running.size).toBeLessThanOrEqual(PHONES);
  const phones = [...world.runtime.all()].flatMap((l) => (l.phone ? [l.phone] : []));
  expect(new Set(phones).size).toBe(phones.length);
  if (!m.paused) {
    const live = liveOf(m).length;
    expect(world.runtime.stats().pool).toEqual({
      warm: Math.min(POOL, PHONES - live),
      warming: 0,
      target: POOL,
    });
    expect(world.backend.running.size).toBe(live + Math.min(POOL, PHONES - live));
  }
}

class Create implements Cmd {
  constructor(
    readonly account: number,
    readonly key: string | null,
    readonly timeout: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const a = m.accounts[this.account % m.accounts.length]!;
    const body = { timeout_seconds: this.timeout };
    const receipt = this.key ? m.receipts.get(`${a.uid}/${this.key}`) : undefined;
    const answer = await codeOf(() => r.world.directory.admit(a.uid, body, this.key));
    await r.world.advance(0);
    // What the model says the answer must be, in the order the contract checks.
    if (receipt) {
      const target = m.sessions.find((s) => s.sid === receipt.sid)!;
      if (receipt.timeout !== this.timeout) expect(answer).toEqual({ code: 'idempotency_key_reused' });
      else if (target.endReason !== null) expect(answer).toEqual({ code: 'request_completed' });
      else {
        expect('ok' in answer).toBe(true);
        const { outcome, session } = (answer as { ok: { outcome: string; session: LiveSession } }).ok;
        expect({ outcome, sid: session.row.id }).toEqual({ outcome: 'replayed', sid: receipt.sid });
      }
    } else if (liveOf(m, a.uid).length >= a.limit) {
      expect(answer).toEqual({ code: 'session_limit' });
    } else if (liveOf(m).length >= PHONES) {
      expect(answer).toEqual({ code: 'phones_busy' });
    } else {
      expect('ok' in answer).toBe(true);
      const { outcome, session: live } = (answer as { ok: { outcome: string; session: LiveSession } }).ok;
      expect(outcome).toBe(m.paused ? 'recorded' : 'admitted');
      // Below capacity the pool always holds a warm phone for an available runtime.
      if (!m.paused)
        expect({ phase: live.phase.kind, source: live.startupSource }).toEqual({
          phase: 'ready',
          source: 'pool',
        });
      m.sessions.push({
        phase: m.paused ? 'queued' : 'ready',
        sid: live.row.id,
        uid: a.uid,
        // Whole seconds, the admission's rounded up: never less than the timeout.
        expiresAt: Math.ceil(m.nowMs / 1000) + this.timeout,
        endReason: null,
        adb: true,
      });
      if (this.key) m.receipts.set(`${a.uid}/${this.key}`, { sid: live.row.id, timeout: this.timeout });
    }
    checkAgreement(m, r);
  }
  toString = () => `create(acct ${this.account}, ${this.key ?? 'no key'}, ${this.timeout} s)`;
}

class End implements Cmd {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const s = m.sessions[this.pick % m.sessions.length]!;
    let answer: { released: boolean } | { code: string };
    try {
      answer = await r.world.directory.end(s.uid, s.sid);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      answer = { code: err.code };
    }
    await r.world.advance(0);
    if (s.endReason !== null) expect(answer).toEqual({ code: 'not_found' });
    else {
      expect(answer).toEqual({ released: true });
      s.endReason = 'released';
    }
    checkAgreement(m, r);
  }
  toString = () => `end(#${this.pick})`;
}

class RevokeAdb implements Cmd {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => liveOf(m as Model).some((s) => s.phase === 'ready');
  async run(m: Model, r: Real): Promise<void> {
    const live = liveOf(m).filter((s) => s.phase === 'ready');
    const s = live[this.pick % live.length]!;
    const session = await r.world.directory.session({ kind: 'owner', uid: s.uid }, s.sid);
    const code = session.row.adb_code!;
    expect(r.world.runtime.sessionForAdbCode(code) === session).toBe(s.adb);
    await r.world.directory.revokeAdb(session);
    s.adb = false;
    expect(r.world.runtime.sessionForAdbCode(code)).toBeNull();
    checkAgreement(m, r);
  }
  toString = () => `revokeAdb(#${this.pick})`;
}

class Tick implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    await r.world.advance(this.ms);
    m.nowMs += this.ms;
    for (const s of liveOf(m)) if (s.expiresAt * 1000 <= m.nowMs) s.endReason = 'expired';
    checkAgreement(m, r);
  }
  toString = () => `tick(${this.ms} ms)`;
}

/** Moves the clock exactly to the next deadline. */
class Expire implements Cmd {
  check = (m: Readonly<Model>) => liveOf(m as Model).length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const next = Math.min(...liveOf(m).map((s) => s.expiresAt * 1000));
    return new Tick(Math.max(0, next - m.nowMs)).run(m, r);
  }
  toString = () => 'expireNext()';
}

class Crash implements Cmd {
  constructor(readonly downMs: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    await r.world.crash(this.downMs);
    m.nowMs += this.downMs;
    // Ready phones died with the process; recorded requests are provisioned again (the new
    // process is available) unless their deadline passed while it was down.
    m.paused = false;
    for (const s of liveOf(m)) {
      if (s.phase === 'ready') s.endReason = 'lost';
      else if (s.expiresAt * 1000 <= m.nowMs) s.endReason = 'expired';
      else s.phase = 'ready';
    }
    checkAgreement(m, r);
  }
  toString = () => `kill -9 (down ${this.downMs} ms)`;
}

class Pause implements Cmd {
  check = (m: Readonly<Model>) => !m.paused;
  async run(m: Model, r: Real): Promise<void> {
    r.world.runtime.pause();
    m.paused = true;
    checkAgreement(m, r);
  }
  toString = () => 'pause()';
}

class Resume implements Cmd {
  check = (m: Readonly<Model>) => m.paused;
  async run(m: Model, r: Real): Promise<void> {
    r.world.runtime.resume();
    await r.world.advance(0);
    m.paused = false;
    for (const s of liveOf(m)) s.phase = 'ready';
    checkAgreement(m, r);
  }
  toString = () => 'resume()';
}

const commands = [
  fc
    .tuple(fc.nat(2), fc.option(fc.constantFrom(...KEYS), { nil: null }), fc.constantFrom(...TIMEOUTS))
    .map(([a, k, t]) => new Create(a, k, t)),
  fc.nat(50).map((i) => new End(i)),
  fc.nat(50).map((i) => new RevokeAdb(i)),
  fc.constantFrom(1_000, 30_000, 59_000, 61_000, 90_000).map((ms) => new Tick(ms)),
  fc.constant(new Expire()),
  fc.constantFrom(0, 1_500, 70_000).map((ms) => new Crash(ms)),
  fc.constant(new Pause()),
  fc.constant(new Resume()),
];

const worlds: RuntimeWorld[] = [];
afterAll(async () => {
  await Promise.all(worlds.splice(0).map((w) => w.close().catch(() => undefined)));
});

describe('the runtime against its model', () => {
  it('answers what the model says and keeps the books, over random sequences with crashes', async () => {
    const seed = process.env.MODEL_SEED ? Number(process.env.MODEL_SEED) : undefined;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 25 }), async (cmds) => {
        const world = new RuntimeWorld({ phones: PHONES, pool: POOL });
        let closed = false;
        try {
          const accounts = [
            { opts: { billingMode: 'disabled' as const, sessionLimit: 2 }, limit: 2 },
            { opts: { billingMode: 'metered' as const, sessionLimit: 3, balanceCents: 100_000 }, limit: 3 },
            { opts: { billingMode: 'metered' as const, sessionLimit: 5, balanceCents: 100_000 }, limit: 5 },
          ].map(({ opts, limit }) => ({ created: world.createAccount(opts), opts, limit }));
          const opening = new Map(
            accounts.filter((a) => a.opts.billingMode === 'metered').map((a) => [a.created.uid, 100_000]),
          );
          await world.advance(0); // the pool fills
          await fc.asyncModelRun(
            () => ({
              model: {
                nowMs: world.clock.now(),
                paused: false,
                accounts: accounts.map((a) => ({ uid: a.created.uid, limit: a.limit })),
                sessions: [],
                receipts: new Map(),
              },
              real: { world, opening },
            }),
            cmds,
          );
          await world.close();
          closed = true;
          // Drained: every phone, pooled or in a session, was stopped.
          expect(world.backend.running.size).toBe(0);
        } finally {
          if (!closed) await world.close();
        }
      }),
      { numRuns: Number(process.env.MODEL_RUNS ?? 300), seed, path: process.env.MODEL_PATH },
    );
  });
});
