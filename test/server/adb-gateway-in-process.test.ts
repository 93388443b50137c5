/**
 * How the ADB gateway hands an unlocked client to its phone, which needs the server in the
 * test's process (a custom device backend): a phone in the server's process takes the
 * socket itself, another (an emulator's adbd) is relayed to over TCP, and both get what the
 * client sent right behind its unlock line.
 * Also the gateway's memory of dead codes, which needs its clock.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { RETIRED_CODE_MS, RetiredCodes } from '../../server/adb-limits.js';
import { ManualClock } from '../../server/clock.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { A_CNXN, hostCnxn, readPacket, readyAdbAccess } from '../support/adb-wire.js';
import { delegatePhone, wrapBackend } from '../support/backends.js';
import { serverPerTest, type TestServer } from '../support/server.js';

const start = serverPerTest();

describe('the gateway hands over what followed the unlock line', () => {
  /** Unlocks with CNXN in the same write as the line; the phone's first packet. */
  async function cnxnGluedToUnlock(t: TestServer): Promise<number> {
    const { port, code } = await readyAdbAccess(t.api);
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.write(Buffer.concat([Buffer.from(`UNLOCK ${code}\n`), hostCnxn()]));
    const reply = await new Promise<Buffer>((resolve) => {
      let buf = Buffer.alloc(0);
      socket.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        if (buf.indexOf(0x0a) >= 0) {
          socket.removeAllListeners('data');
          socket.pause();
          resolve(buf);
        }
      });
    });
    const nl = reply.indexOf(0x0a);
    expect(reply.subarray(0, nl).toString()).toBe('OK');
    const first = await readPacket(socket, reply.subarray(nl + 1));
    socket.destroy();
    return first.command;
  }

  it('to a phone in its own process, which serves the socket itself', async () => {
    const t = await start({ bootMs: 0 });
    expect(await cnxnGluedToUnlock(t)).toBe(A_CNXN);
  });

  it('to a phone it reaches over TCP, through the relay', async () => {
    // A phone without serveAdb (as an emulator in its own process): the gateway relays.
    const backend = wrapBackend(createVirtualBackend({ bootMs: 0 }), (phone) => delegatePhone(phone, {}));
    const t = await start({ backend });
    expect(await cnxnGluedToUnlock(t)).toBe(A_CNXN);
  });
});

describe('dead codes are remembered for a while, in bounded memory', () => {
  it('knows a retired code until RETIRED_CODE_MS has passed, and no code it was not told', async () => {
    const clock = new ManualClock();
    const retired = new RetiredCodes(clock);
    retired.add('pau_dead');
    expect(retired.has('pau_dead')).toBe(true);
    expect(retired.has('pau_other')).toBe(false);
    await clock.advance(RETIRED_CODE_MS - 1);
    expect(retired.has('pau_dead')).toBe(true);
    await clock.advance(1);
    expect(retired.has('pau_dead')).toBe(false);
  });

  it('forgets the oldest codes first once it holds 20,000', () => {
    const retired = new RetiredCodes(new ManualClock());
    for (let i = 0; i <= 20_000; i++) retired.add(`pau_${i}`);
    expect(retired.has('pau_0')).toBe(false);
    expect(retired.has('pau_1')).toBe(true);
    expect(retired.has('pau_20000')).toBe(true);
  });
});
