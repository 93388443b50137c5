/**
 * No secret reaches the server's log, at any level, wherever a client puts it: account
 * keys, view grants, ADB unlock codes and viewer URLs in odd places of a URL, encoded or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../server/log.js';
import { startTestServer, type TestServer } from '../support/server.js';

const lines: string[] = [];
let t: TestServer;
let secrets: string[];
let sid: string;

beforeAll(async () => {
  t = await startTestServer({ log: createLogger({ level: 'debug', write: (l) => lines.push(l) }) });
  const s = (await t.api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
  sid = s.id;
  await t.api.waitFor(sid, ['ready']);
  const grant = new URL(s.watch_url).searchParams.get('token')!;
  const code = (await t.api.get(`/sessions/${sid}/adb`)).body.code as string;
  const viewer = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body.url as string;
  expect(viewer).toMatch(/\/v\//);
  // The parts that grant access on their own: the whole secret, and the secret without
  // its prefix (an encoded prefix must not let the rest through).
  secrets = [t.account.key, grant, code, viewer.split('/v/')[1]!].flatMap((x) => [x, x.slice(4)]);
});
afterAll(() => t.close());

const encAll = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

describe('the debug log', () => {
  it('redacts secrets in every odd place of a URL', async () => {
    const [key, grant, code, viewerToken] = [secrets[0]!, secrets[2]!, secrets[4]!, secrets[6]!];
    const viewerUrl = `${t.url}/v/${viewerToken}`;
    const paths = [
      `/sessions/${sid}?x=a_${grant}`,
      `/sessions/${sid}?token%3D${grant}`,
      `/sessions/${sid}?t=pvg%5F${grant.slice(4)}`,
      `/sessions/${sid}?q=${encAll(grant)}`,
      `/sessions/${sid}?q=${encodeURIComponent(encodeURIComponent(grant))}`,
      `/me?apikey${key}`,
      `/me?k=${encAll(key)}`,
      `/sessions/${sid}/${code}`,
      `/sessions/${sid}?c=${encAll(code)}`,
      `/sessions/${sid}?code=${code}`,
      `/sessions/${sid}?next=${encodeURIComponent(viewerUrl)}`,
      `/x/${viewerUrl}`,
    ];
    for (const path of paths) await t.api.get(path);
    const log = lines.join('\n');
    // The requests were logged (so the assertion below looks at real lines).
    expect(lines.filter((l) => l.includes(' http ')).length).toBeGreaterThanOrEqual(paths.length);
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
