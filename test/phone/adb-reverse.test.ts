/**
 * Stock `adb reverse` and `adb forward ... localabstract:` through the session's gateway: the
 * phone listens on its own port, each connection comes back to the host over the ADB
 * transport, and the phone's network reaches the host only through those listeners.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';
import { freePort } from '../../src/util/ports.js';
import { trackedServer } from '../support/tcp.js';

let v: VirtualAdb;
let site: Server;
let sitePort: number;

beforeAll(async () => {
  v = await startVirtualAdb();
  site = createServer((req, res) => res.end(`host says hi to ${req.url}`));
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  sitePort = (site.address() as AddressInfo).port;
});

afterAll(async () => {
  await v?.close();
  await new Promise((resolve) => site?.close(resolve));
});

/** An HTTP GET over a connection made inside the phone; the raw response. */
function getOver(socket: Duplex, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.once('error', reject);
    socket.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
}

/**
 * Connects through the phone's own network the way its browser does (SOCKS5, by name) and
 * makes a GET; the response, or `SOCKS status N` when the phone refuses the connection.
 */
async function socksGet(host: string, port: number, path: string): Promise<string> {
  const proxyPort = await v.phone.device.network.proxyPort();
  const socket = netConnect({ host: '127.0.0.1', port: proxyPort });
  let buffered = Buffer.alloc(0);
  let closed = false;
  let wake: () => void = () => undefined;
  socket.on('data', (c: Buffer) => {
    buffered = Buffer.concat([buffered, c]);
    wake();
  });
  socket.once('close', () => {
    closed = true;
    wake();
  });
  socket.on('error', () => undefined);
  const take = async (n: number): Promise<Buffer | null> => {
    while (buffered.length < n && !closed) await new Promise<void>((resolve) => (wake = resolve));
    if (buffered.length < n) return null;
    const head = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return head;
  };
  socket.write(Buffer.from([5, 1, 0]));
  expect([...((await take(2)) ?? [])]).toEqual([5, 0]);
  const name = Buffer.from(host);
  socket.write(
    Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([port >> 8, port & 255])]),
  );
  const reply = await take(10);
  if (!reply || reply[1] !== 0) {
    socket.destroy();
    return `SOCKS status ${reply?.[1] ?? 'none'}`;
  }
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  while (!closed) await new Promise<void>((resolve) => (wake = resolve));
  return buffered.toString('utf8');
}

describe('adb reverse', () => {
  it('makes the phone port reach the host port over the ADB transport', async () => {
    const phonePort = 41000 + Math.floor(Math.random() * 1000);
    const out = await v.adbOk(['reverse', `tcp:${phonePort}`, `tcp:${sitePort}`]);
    // adb 29 prints the bound port reported by the phone for tcp: listeners.
    expect(out.trim() === '' || out.trim() === String(phonePort)).toBe(true);
    const inner = v.phone.device.network.connectPort(phonePort);
    expect(inner).not.toBeNull();
    const response = await getOver(inner!, '/through-reverse');
    expect(response).toContain('host says hi to /through-reverse');

    const list = await v.adbOk(['reverse', '--list']);
    expect(list).toMatch(new RegExp(`^host-\\d+ tcp:${phonePort} tcp:${sitePort}$`, 'm'));
    await v.adbOk(['reverse', '--remove', `tcp:${phonePort}`]);
  });

  it('answers tcp:0 with the port the phone picked', async () => {
    const out = (await v.adbOk(['reverse', 'tcp:0', `tcp:${sitePort}`])).trim();
    const port = Number(out);
    expect(port).toBeGreaterThan(0);
    const response = await getOver(v.phone.device.network.connectPort(port)!, '/picked');
    expect(response).toContain('host says hi to /picked');
    await v.adbOk(['reverse', '--remove', `tcp:${port}`]);
  });

  it('refuses a rebind with --no-rebind and a removal of an unknown listener, in adbd words', async () => {
    const phonePort = 43000 + Math.floor(Math.random() * 1000);
    await v.adbOk(['reverse', `tcp:${phonePort}`, `tcp:${sitePort}`]);
    const again = await v.adb(['reverse', '--no-rebind', `tcp:${phonePort}`, `tcp:${sitePort}`]);
    expect(again.code).not.toBe(0);
    expect(again.stderr + again.stdout).toContain('cannot rebind existing socket');
    // Without --no-rebind the listener moves to the new target.
    const other = await freePort();
    await v.adbOk(['reverse', `tcp:${phonePort}`, `tcp:${other}`]);
    expect(await v.adbOk(['reverse', '--list'])).toContain(`tcp:${phonePort} tcp:${other}`);
    await v.adbOk(['reverse', '--remove', `tcp:${phonePort}`]);
    const gone = await v.adb(['reverse', '--remove', `tcp:${phonePort}`]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr + gone.stdout).toContain(`listener 'tcp:${phonePort}' not found`);
    expect(v.phone.device.network.connectPort(phonePort)).toBeNull();
  });

  it('listens on an abstract socket of the phone (localabstract:), and refuses what adbd refuses', async () => {
    await v.adbOk(['reverse', 'localabstract:phonelease_reverse', `tcp:${sitePort}`]);
    expect(await v.adbOk(['reverse', '--list'])).toMatch(
      new RegExp(`^host-\\d+ localabstract:phonelease_reverse tcp:${sitePort}$`, 'm'),
    );
    // An app on the phone connects to it by name, and /proc/net/unix lists it.
    const inner = v.phone.device.network.connectAbstract('phonelease_reverse');
    expect(inner).not.toBeNull();
    expect(await getOver(inner!, '/abstract')).toContain('host says hi to /abstract');
    expect(await v.adbOk(['shell', 'cat /proc/net/unix'])).toContain('@phonelease_reverse\n');
    const again = await v.adb(['reverse', '--no-rebind', 'localabstract:phonelease_reverse', 'tcp:1']);
    expect(again.stderr).toContain('cannot rebind existing socket');
    await v.adbOk(['reverse', '--remove', 'localabstract:phonelease_reverse']);
    expect(v.phone.device.network.connectAbstract('phonelease_reverse')).toBeNull();
    // A name the phone's own software holds, an unknown spec, and socket files.
    v.phone.device.network.abstractSockets.set('held_by_an_app', () => undefined);
    for (const [local, error] of [
      [
        'localabstract:held_by_an_app',
        "cannot bind listener: cannot bind to abstract socket 'held_by_an_app': Address already in use",
      ],
      ['bogus:1', 'cannot bind listener: unknown socket specification:bogus:1'],
      [
        'localfilesystem:/data/local/tmp/s',
        'cannot bind listener: localfilesystem:/data/local/tmp/s: socket files are not modeled by the virtual phone (use tcp:PORT or localabstract:NAME)',
      ],
    ] as const) {
      const r = await v.adb(['reverse', local, `tcp:${sitePort}`]);
      expect(r.code, local).toBe(1);
      expect(r.stderr, local).toBe(`adb: error: ${error}\n`);
    }
    v.phone.device.network.abstractSockets.delete('held_by_an_app');
  });

  it("leaves Chrome without DevTools when a reverse holds its socket's name, as a bind that fails does", async () => {
    await v.adbOk(['shell', 'am force-stop com.android.chrome']);
    await v.adbOk(['reverse', 'localabstract:chrome_devtools_remote', `tcp:${sitePort}`]);
    await v.adbOk(['shell', 'am start -W -a android.intent.action.VIEW -d about:blank com.android.chrome']);
    await expect
      .poll(() => v.adbOk(['shell', 'logcat -d -s chromium']), { timeout: 15_000 })
      .toContain('Cannot start http server for devtools: @chrome_devtools_remote is in use');
    // The socket is still the reverse's: it reaches the host's server.
    const inner = v.phone.device.network.connectAbstract('chrome_devtools_remote');
    expect(await getOver(inner!, '/still-reversed')).toContain('host says hi to /still-reversed');
    await v.adbOk(['reverse', '--remove', 'localabstract:chrome_devtools_remote']);
    await v.adbOk(['shell', 'am force-stop com.android.chrome']);
  });

  it('removes every listener with --remove-all', async () => {
    await v.adbOk(['reverse', 'tcp:44001', `tcp:${sitePort}`]);
    await v.adbOk(['reverse', 'tcp:44002', `tcp:${sitePort}`]);
    await v.adbOk(['reverse', '--remove-all']);
    expect((await v.adbOk(['reverse', '--list'])).trim()).toBe('');
    expect(v.phone.device.network.connectPort(44001)).toBeNull();
  });
});

describe("the phone's network", () => {
  it("reaches the runner's localhost only through reverse, and refuses other loopback ports", async () => {
    // The site listens on the server machine's loopback, but the phone's localhost is its own.
    // Answered by the phone itself (a 502 page that says what to do), never by the runner's server.
    const refused = await socksGet('localhost', sitePort, '/direct');
    expect(refused).toMatch(/^HTTP\/1\.1 502 /);
    expect(refused).toContain(`phone.reverse(${sitePort})`);
    expect(refused).not.toContain('host says hi');
    const phonePort = 45000 + Math.floor(Math.random() * 1000);
    await v.adbOk(['reverse', `tcp:${phonePort}`, `tcp:${sitePort}`]);
    expect(await socksGet('localhost', phonePort, '/via-proxy')).toContain('host says hi to /via-proxy');
    expect(await socksGet('127.0.0.1', phonePort, '/by-ip')).toContain('host says hi to /by-ip');
    await v.adbOk(['reverse', '--remove', `tcp:${phonePort}`]);
    const logcat = await v.adbOk(['logcat', '-d', '-s', 'PhoneNetwork']);
    expect(logcat).toContain(`connection to localhost:${sitePort} refused`);
  });
});

describe('adb forward to an abstract socket', () => {
  it('connects tcp:X to localabstract:NAME while something listens there, and is refused otherwise', async () => {
    v.phone.device.network.abstractSockets.set('phonelease_echo', (socket) => {
      socket.on('data', (c: Buffer) => socket.write(Buffer.from(c.toString().toUpperCase())));
    });
    const local = await freePort();
    await v.adbOk(['forward', `tcp:${local}`, 'localabstract:phonelease_echo']);
    const echoed = await new Promise<string>((resolve, reject) => {
      const s = netConnect({ host: '127.0.0.1', port: local }, () => s.write('hello'));
      s.once('data', (c: Buffer) => {
        resolve(c.toString());
        s.destroy();
      });
      s.once('error', reject);
    });
    expect(echoed).toBe('HELLO');
    v.phone.device.network.abstractSockets.delete('phonelease_echo');
    const refused = await new Promise<string>((resolve) => {
      const s = netConnect({ host: '127.0.0.1', port: local });
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      s.once('close', () => resolve(Buffer.concat(chunks).toString()));
      s.once('error', () => resolve('error'));
    });
    expect(refused).toBe('');
    await v.adbOk(['forward', '--remove', `tcp:${local}`]);
  });
});

/** Calls back with the first length-prefixed message read from a socket. */
function readMessage(socket: Duplex, onMessage: (payload: Buffer) => void): void {
  let buffered = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (buffered.length < 4 || buffered.length < 4 + buffered.readUInt32BE(0)) return;
    socket.off('data', onData);
    onMessage(buffered.subarray(4, 4 + buffered.readUInt32BE(0)));
  };
  socket.on('data', onData);
}

function framed(payload: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(payload.length);
  return Buffer.concat([header, payload]);
}

describe('bytes written before a close', () => {
  it('arrive in 200 rounds through adb forward, an app on the phone and adb reverse to the host', async () => {
    // The host end answers with what it got and closes at once, behind `adb reverse`.
    const host = await trackedServer((socket) => readMessage(socket, (payload) => socket.end(payload)));
    const reversePort = 47000 + Math.floor(Math.random() * 1000);
    await v.adbOk(['reverse', `tcp:${reversePort}`, `tcp:${host.port}`]);
    // An app on the phone, reached with `adb forward`: it passes the message on to the host
    // through the reverse port and hands each chunk of the answer back asynchronously, then
    // closes right after its last write.
    const appPort = 48000 + Math.floor(Math.random() * 1000);
    const unlisten = v.phone.device.network.listen(
      appPort,
      (client) =>
        readMessage(client, (payload) => {
          const up = v.phone.device.network.connectPort(reversePort)!;
          up.write(framed(payload));
          void (async () => {
            try {
              for await (const chunk of up) {
                await new Promise((resolve) => setImmediate(resolve));
                client.write(chunk as Buffer);
              }
              up.end();
              client.end();
            } catch {
              client.destroy();
            }
          })();
        }),
      { uid: 10_200, bind: 'any' },
    );
    const local = await freePort();
    await v.adbOk(['forward', `tcp:${local}`, `tcp:${appPort}`]);
    const short: string[] = [];
    for (let round = 0; round < 200; round++) {
      const payload = Buffer.alloc(1 + ((round * 7919) % 96_000), round % 251);
      // The client keeps its socket open until the answer is in: stock adb itself drops what a
      // client writes and closes before the forwarded stream has opened.
      const answer = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        const socket = netConnect({ host: '127.0.0.1', port: local }, () => socket.write(framed(payload)));
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.once('close', () => resolve(Buffer.concat(chunks)));
        socket.once('error', () => undefined);
      });
      if (!answer.equals(payload)) short.push(`round ${round}: ${answer.length} of ${payload.length} bytes`);
    }
    unlisten();
    await v.adbOk(['forward', '--remove', `tcp:${local}`]);
    await v.adbOk(['reverse', '--remove', `tcp:${reversePort}`]);
    await host.close();
    expect(short).toEqual([]);
  });
});
