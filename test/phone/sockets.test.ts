/**
 * The phone's sockets as tools see them through stock adb: /proc/net/tcp and tcp6 in the
 * kernel's columns (appium-adb's listPorts() parses them by their header), and toybox's
 * netstat over the same files: `adb reverse` listeners (adbd, IPv4 loopback), `nc -l` (the
 * IPv6 wildcard), and the two ends of an `adb forward` connection while it is open.
 */
import { spawn } from 'node:child_process';
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../src/util/ports.js';
import { ADB } from '../support/adb.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;

beforeAll(async () => {
  v = await startVirtualAdb();
});

afterAll(async () => {
  await v?.close();
});

const shell = (command: string) => v.adbOk(['shell', command]);

/** Listening ports of one /proc/net file, read the way appium-adb's listPorts() reads them. */
async function listPorts(file: 'tcp' | 'tcp6'): Promise<{ port: number; state: number }[]> {
  const lines = (await shell(`cat /proc/net/${file}`)).split('\n');
  const headers = lines[0]!.split(/\s+/).filter(Boolean);
  const local = headers.indexOf('local_address');
  const st = headers.indexOf('st');
  expect(local).toBeGreaterThanOrEqual(0);
  expect(st).toBeGreaterThanOrEqual(0);
  return lines
    .slice(1)
    .map((l) => l.split(/\s+/).filter(Boolean))
    .filter((v) => v.length > st)
    .map((v) => ({ port: parseInt(v[local]!.split(':')[1]!, 16), state: parseInt(v[st]!, 16) }));
}

describe('/proc/net', () => {
  it('lists the kernel headers and nothing else on a phone where nothing listens', async () => {
    const tcp = await shell('cat /proc/net/tcp');
    // IPv4 lines are padded to 149 columns, as the kernel's seq_pad does.
    expect(tcp).toBe(
      `${'  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode'.padEnd(149)}\n`,
    );
    expect(await shell('cat /proc/net/tcp6')).toBe(
      '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n',
    );
    expect(await shell('ls /proc/net')).toBe('raw\nraw6\ntcp\ntcp6\nudp\nudp6\nunix\n');
  });

  it('shows an adb reverse listener as adbd listening on 127.0.0.1, until it is removed', async () => {
    const port = 47_000 + Math.floor(Math.random() * 1000);
    const hostPort = await freePort();
    await v.adbOk(['reverse', `tcp:${port}`, `tcp:${hostPort}`]);
    const hex = port.toString(16).toUpperCase().padStart(4, '0');
    const tcp = await shell('cat /proc/net/tcp');
    expect(tcp).toContain(
      `   0: 0100007F:${hex} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  2000        0 `,
    );
    expect(await listPorts('tcp')).toEqual([{ port, state: 0x0a }]);
    expect(await shell('netstat -ltn')).toBe(
      'Active Internet connections (only servers)\n' +
        'Proto Recv-Q Send-Q Local Address           Foreign Address         State      \n' +
        `tcp        0      0 ${`127.0.0.1:${port}`.padEnd(23)} 0.0.0.0:*               LISTEN     \n`,
    );
    // Names unless -n (bionic finds localhost in /system/etc/hosts); the user with -e.
    expect(await shell('netstat -lte')).toContain(
      `tcp        0      0 ${`localhost:${port}`.padEnd(23)} 0.0.0.0:*               LISTEN      shell      `,
    );
    await v.adbOk(['reverse', '--remove', `tcp:${port}`]);
    expect(await listPorts('tcp')).toEqual([]);
  });

  it('lists nc -l on the IPv6 wildcard, then both ends of an adb forward connection while it is open', async () => {
    const phonePort = 5_000 + Math.floor(Math.random() * 1000);
    const local = await freePort();
    // nc keeps its stdin (adb's) open until the test is done with it.
    const listener = spawn(
      ADB,
      ['-P', String(v.adbServerPort), '-s', v.serial, 'shell', `nc -l -p ${phonePort}`],
      {
        stdio: ['pipe', 'pipe', 'ignore'],
      },
    );
    let received = '';
    listener.stdout!.on('data', (c: Buffer) => (received += c.toString()));
    try {
      await vi.waitFor(
        async () => expect(await listPorts('tcp6')).toEqual([{ port: phonePort, state: 0x0a }]),
        {
          timeout: 10_000,
        },
      );
      expect(await shell('netstat -ltn')).toContain(
        `tcp6       0      0 ${`[::]:${phonePort}`.padEnd(23)} [::]:*                  LISTEN     \n`,
      );
      await v.adbOk(['forward', `tcp:${local}`, `tcp:${phonePort}`]);
      const socket: Socket = netConnect({ host: '127.0.0.1', port: local });
      socket.on('error', () => undefined);
      socket.write('hello\n');
      await vi.waitFor(() => expect(received).toBe('hello\n'), { timeout: 10_000 });
      // nc served its one connection and stopped listening; adbd's end is IPv4, nc's an IPv6
      // socket with an IPv4-mapped peer.
      const tcp = await shell('netstat -tan');
      const ends = tcp.split('\n').filter((l) => l.includes('ESTABLISHED'));
      expect(ends).toHaveLength(2);
      const clientPort = Number(/^tcp +0 +0 127\.0\.0\.1:(\d+) /.exec(ends[0]!)?.[1]);
      expect(ends).toEqual([
        `tcp        0      0 ${`127.0.0.1:${clientPort}`.padEnd(23)} ${`127.0.0.1:${phonePort}`.padEnd(23)} ESTABLISHED`,
        `tcp6       0      0 ${`::ffff:127.0.0.1:${phonePort}`.padEnd(23)} ${`::ffff:127.0.0.1:${clientPort}`.padEnd(23)} ESTABLISHED`,
      ]);
      expect(tcp).not.toContain('LISTEN');
      expect(await shell('cat /proc/net/tcp6')).toContain(
        `0000000000000000FFFF00000100007F:${phonePort.toString(16).toUpperCase().padStart(4, '0')} 0000000000000000FFFF00000100007F:`,
      );
      socket.destroy();
      await vi.waitFor(async () => expect(await shell('netstat -tan')).not.toContain('ESTABLISHED'), {
        timeout: 10_000,
      });
    } finally {
      listener.kill();
      await v.adb(['forward', '--remove', `tcp:${local}`]);
    }
  });

  it('answers what it does not model, and toybox refusals, as such', async () => {
    const route = await v.adb(['shell', 'netstat -r']);
    expect(route.code).toBe(1);
    expect(route.stderr).toBe('netstat: -r: not modeled by the virtual phone (it has no /proc/net/route)\n');
    const unknown = await v.adb(['shell', 'netstat -z']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`netstat: Unknown option 'z' (see "netstat --help")\n`);
  });
});
