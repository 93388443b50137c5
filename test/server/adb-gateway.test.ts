/**
 * The ADB gateway under hostile ordering of events and under code guessing: a revoked or
 * ended session keeps no relay open, and wrong codes are limited per source and per session
 * without locking the owner out.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAG_LENGTH } from '../../server/adb-limits.js';
import { A_CNXN, closed, hostCnxn, readPacket, readyAdbAccess, unlock } from '../support/adb-wire.js';
import { useTargets, type Target } from '../support/target.js';

const targets = useTargets();
const start = targets.perTest;

/** Resolves with the bytes that arrive within `ms`, or with none (never rejects). */
function bytesWithin(socket: net.Socket, ms: number): Promise<number> {
  return new Promise((resolve) => {
    let n = 0;
    const onData = (chunk: Buffer) => (n += chunk.length);
    socket.on('data', onData);
    socket.once('error', () => undefined);
    socket.resume();
    setTimeout(() => {
      socket.off('data', onData);
      resolve(n);
    }, ms);
  });
}

describe('revoking ADB or ending a session leaves no relay open', () => {
  let t: Target;
  beforeAll(async () => {
    t = await targets.start({ bootMs: 0, account: { sessionLimit: 50 } });
  });
  afterAll(() => t.close());

  // The sequence of the report: one relay ends while another opens; the first relay's two
  // close events must not drop the bookkeeping of the second. Repeated because the order of
  // the close events varies from run to run.
  for (const how of ['revoke', 'end'] as const) {
    it(`a relay opened while an earlier one closes is cut by ${how}`, async () => {
      for (let i = 0; i < 8; i++) {
        const { sid, port, code } = await readyAdbAccess(t.api);
        const first = await unlock(port, code);
        expect(first.line).toBe('OK');
        first.socket.write(hostCnxn());
        expect((await readPacket(first.socket, first.rest)).command).toBe(A_CNXN);
        first.socket.destroy();
        const second = await unlock(port, code);
        expect(second.line).toBe('OK');
        // Let both close events of the first relay arrive before the cut.
        await new Promise((r) => setTimeout(r, 30));
        if (how === 'revoke')
          expect((await t.api.delete(`/sessions/${sid}/adb`)).body).toEqual({ revoked: true });
        else await t.api.delete(`/sessions/${sid}`);
        second.socket.write(hostCnxn());
        expect(await bytesWithin(second.socket, 150)).toBe(0);
        await closed(second.socket, 2000);
        if (how === 'revoke') await t.api.delete(`/sessions/${sid}`);
      }
    });
  }
});

describe('wrong unlock codes are limited', () => {
  /** A connection from another loopback address: the gateway sees another source. */
  const from = (localAddress: string) => (port: number, code: string) => unlockFrom(port, code, localAddress);

  it('a source that keeps guessing is refused, while another source unlocks with the right code', async () => {
    const t = await start({ bootMs: 0 });
    const { port, code } = await readyAdbAccess(t.api);
    const wrong = code.slice(0, -1) + (code.endsWith('a') ? 'b' : 'a');
    const guesser = from('127.0.0.3');
    for (let i = 0; i < 10; i++) expect((await guesser(port, `x${i}${wrong}`)).line).toBe('DENIED');
    // Over the limit the code is not even looked at: the right one is refused too.
    expect((await guesser(port, code)).line).toBe('DENIED');
    // The owner's source is unaffected.
    const owner = await from('127.0.0.1')(port, code);
    expect(owner.line).toBe('OK');
    owner.socket.destroy();
  });

  it('guesses that name a session stop counting against it for the source that unlocked it before', async () => {
    const t = await start({ bootMs: 0 });
    const { port, code } = await readyAdbAccess(t.api);
    const owner = await from('127.0.0.1')(port, code);
    expect(owner.line).toBe('OK');
    owner.socket.destroy();
    // Guesses that match the start of the session's code (a partly leaked code), each from
    // a fresh source so that no per-source limit applies.
    for (let i = 0; i < 5; i++) {
      const guess = `${code.slice(0, TAG_LENGTH)}${'z'.repeat(code.length - TAG_LENGTH)}${i}`;
      expect((await from(`127.0.1.${i + 1}`)(port, guess)).line).toBe('DENIED');
    }
    // The session's limit is spent: a new source is refused even with the right code...
    expect((await from('127.0.2.1')(port, code)).line).toBe('DENIED');
    // ...while the owner's source, which unlocked it before, still gets through.
    const again = await from('127.0.0.1')(port, code);
    expect(again.line).toBe('OK');
    again.socket.destroy();
  });

  it('codes of ended sessions and of revoked ADB are refused without locking their source out of a new phone', async () => {
    // An adb server still connected to an ended phone reconnects several times a second
    // with its dead code; a CI machine's workers all come from one address.
    const t = await start({ bootMs: 0, account: { sessionLimit: 3 } });
    const knock = from('127.0.0.5');
    const ended = await readyAdbAccess(t.api);
    const revoked = await readyAdbAccess(t.api);
    for (const access of [ended, revoked]) {
      const owner = await knock(access.port, access.code);
      expect(owner.line).toBe('OK');
      owner.socket.destroy();
    }
    await t.api.delete(`/sessions/${ended.sid}`);
    expect((await t.api.delete(`/sessions/${revoked.sid}/adb`)).body).toEqual({ revoked: true });
    for (let i = 0; i < 12; i++) {
      expect((await knock(ended.port, ended.code)).line, `ended ${i}`).toBe('DENIED');
      expect((await knock(revoked.port, revoked.code)).line, `revoked ${i}`).toBe('DENIED');
    }
    const fresh = await readyAdbAccess(t.api);
    const unlocked = await knock(fresh.port, fresh.code);
    expect(unlocked.line, 'fresh').toBe('OK');
    unlocked.socket.destroy();
    // Wrong codes from that source still count: ten of them and it is refused.
    for (let i = 0; i < 10; i++) expect((await knock(fresh.port, `pau_wrong${i}`)).line).toBe('DENIED');
    expect((await knock(fresh.port, fresh.code)).line).toBe('DENIED');
  });

  it('answers DENIED and closes when anything follows the unlock line of a refused attempt', async () => {
    const t = await start({ bootMs: 0 });
    const { port } = await readyAdbAccess(t.api);
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`UNLOCK nope\n${hostCnxn().toString('latin1')}`, 'latin1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await closed(socket);
    expect(Buffer.concat(chunks).toString()).toBe('DENIED\n');
  });
});

async function unlockFrom(
  port: number,
  code: string,
  localAddress: string,
): Promise<{ socket: net.Socket; line: string }> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`UNLOCK ${code}\n`);
  let buf = '';
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        socket.off('data', onData);
        resolve({ socket, line: buf.slice(0, nl) });
      }
    };
    socket.on('data', onData);
    socket.once('error', () => undefined);
    socket.once('close', () => resolve({ socket, line: buf }));
  });
}
