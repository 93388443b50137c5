/**
 * Refusals of the HTTP layer, before fastify has a request: each is sent as raw bytes on
 * its own connection, answered with the contract's error body ({error, code}) and the
 * status of that code in the registry, and the server keeps answering afterwards.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_REGISTRY } from '../../src/api/errors.js';
import { isErrorCode } from '../../src/api/errors.js';
import { Api } from '../support/server.js';
import { useTargets, type Target } from '../support/target.js';

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `bytes` on a new connection and reads until the server closes it. */
function exchange(port: number, bytes: Buffer | string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no HTTP response: ${JSON.stringify(text.slice(0, 200))}`));
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) });
    });
    socket.write(bytes);
  });
}

const targets = useTargets();
let t: Target;
let turn = 0;
/** The next server in turn (each API node of a deployment). */
const nextNode = () => {
  const url = t.urls[turn++ % t.urls.length]!;
  return { url, port: Number(new URL(url).port) };
};
const nextPort = () => nextNode().port;
beforeAll(async () => {
  t = await targets.start();
});
afterAll(() => t.close());

const request = (head: string) => `${head}\r\n\r\n`;

const cases: Array<[name: string, bytes: () => Buffer | string, status: number, code: string]> = [
  [
    'a 20,000-character Authorization header',
    () => request(`GET /me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(20_000)}`),
    431,
    'headers_too_large',
  ],
  ['an unknown method', () => request('FOO /me HTTP/1.1\r\nHost: x'), 400, 'invalid_request'],
  [
    'a control character in a header',
    () => request('GET /me HTTP/1.1\r\nHost: x\r\nX-A: a\x01b'),
    400,
    'invalid_request',
  ],
  [
    'both Transfer-Encoding and Content-Length',
    () =>
      'POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'Content-Length: -1',
    () => 'POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'a byte 0xFF in the path',
    () =>
      Buffer.concat([
        Buffer.from('GET /sessions/'),
        Buffer.from([0xff]),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
      ]),
    400,
    'invalid_request',
  ],
  ['HTTP/1.1 without Host', () => request('GET /me HTTP/1.1\r\nConnection: close'), 400, 'invalid_request'],
];

describe('HTTP-layer refusals', () => {
  it.each(cases)('%s: the error body, and the server still answers', async (_name, bytes, status, code) => {
    const node = nextNode();
    const r = await exchange(node.port, bytes());
    expect(r.status).toBe(status);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(r.body) as Record<string, unknown>;
    expect(body).toEqual({ error: expect.any(String), code });
    expect(isErrorCode(body.code) && ERROR_REGISTRY[body.code].status).toBe(status);
    // The answer never echoes what was refused.
    expect(r.body).not.toContain('aaaaaaaa');

    // The node that refused still answers.
    const after = await new Api(node.url, t.account.key).get('/me');
    expect(after.status).toBe(200);
    expect(after.body.uid).toBe(t.account.uid);
  });

  it('answers each refused connection once, however much more the client sends', async () => {
    const socket = net.connect(nextPort(), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('FOO / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.write('BAR / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(50));
    await closed;
    const text = Buffer.concat(chunks).toString('latin1');
    expect(text.match(/HTTP\/1\.1 400/g)).toHaveLength(1);
  });

  it('HTTP/1.0 without Host is still a request', async () => {
    const r = await exchange(
      nextPort(),
      request(`GET /me HTTP/1.0\r\nAuthorization: Bearer ${t.account.key}`),
    );
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ uid: t.account.uid });
  });
});
