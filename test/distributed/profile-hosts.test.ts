/**
 * The profile phone in a deployment: its save lives on the disk of the device host that ran
 * its last session, so the next profile session runs on that host (waiting for room there
 * rather than starting elsewhere without the save), and restores what the last one left.
 * When that host dies, the save goes with it: the profile says so (`empty`, not exact) and
 * its next session starts fresh on another host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAdb } from '../support/adb.js';
import { Deployment } from '../support/deployment.js';
import type { Api } from '../support/server.js';
import { postgresMissing, sql, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment profile tests: ${missing}`);

const MARK = '/sdcard/phonelease-profile-mark.txt';

async function hostOf(d: Deployment, sid: string): Promise<string | null> {
  const [row] = await sql<{ host_id: string | null }>(d.store, 'SELECT host_id FROM sessions WHERE id = $1', [
    sid,
  ]);
  return row?.host_id ?? null;
}

/** What the phone's mark file says ('' when there is none), through stock adb. */
async function readMark(api: Api, sid: string): Promise<string> {
  const adb = await connectAdb(api, sid);
  try {
    return (await adb.adb('shell', `cat ${MARK} 2>/dev/null || true`)).trim();
  } finally {
    await adb.close();
  }
}

describe.skipIf(missing !== null)('the profile phone across device hosts', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, {
      nodes: 2,
      hosts: [['--phones', '1']],
      env: { PHONELEASE_HOST_LOST_AFTER_MS: '1500' },
    });
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('runs on the host that holds its save, restores it there, and starts fresh when that host dies', async () => {
    const account = await d.account();
    const api = d.api(0, account.key);
    const other = d.api(1, account.key);
    const first = d.hosts[0]!.line.host;

    // The first profile session can only run on the one host; it leaves a mark.
    const p1 = (
      await api.post('/sessions', { body: { profile_id: account.profile_id, timeout_seconds: 120 } })
    ).body.id as string;
    await api.waitFor(p1, ['ready']);
    expect(await hostOf(d, p1)).toBe(first);
    const adb = await connectAdb(api, p1);
    await adb.adb('shell', `echo kept-by-${p1} > ${MARK}`);
    await adb.close();
    expect((await other.delete(`/sessions/${p1}`)).status).toBe(200);
    await d.waitGone(api, p1);
    expect((await api.get('/me')).body.profile).toMatchObject({ state: 'stored', exact: true });

    // That host is full now, and a second host with room joins.
    const temp = (await api.post('/sessions', { body: { timeout_seconds: 120 } })).body.id as string;
    await api.waitFor(temp, ['ready']);
    expect(await hostOf(d, temp)).toBe(first);
    const second = (await d.startHost(['--phones', '1'])).line.host;

    // The profile waits for the host with its save instead of starting empty on the free one.
    const p2 = (
      await other.post('/sessions', { body: { profile_id: account.profile_id, timeout_seconds: 120 } })
    ).body.id as string;
    await new Promise((r) => setTimeout(r, 1500));
    // Queued, not booting: the free host's boot slot is not one it can use.
    expect((await api.get(`/sessions/${p2}`)).body).toMatchObject({
      state: 'provisioning',
      location: 'queued',
    });
    expect(await hostOf(d, p2)).toBeNull();
    await other.delete(`/sessions/${temp}`);
    await api.waitFor(p2, ['ready']);
    expect(await hostOf(d, p2)).toBe(first);
    expect(await readMark(api, p2)).toBe(`kept-by-${p1}`);

    // The host with the save dies under the profile session: the save is gone with it.
    d.hosts[0]!.child.kill('SIGKILL');
    await d.waitGone(api, p2);
    const lost = (await api.get('/me')).body.profile;
    expect(lost).toMatchObject({ state: 'empty', exact: false, session: null });

    // The next profile session runs on the host that is left, from a fresh phone.
    const p3 = (
      await other.post('/sessions', { body: { profile_id: account.profile_id, timeout_seconds: 120 } })
    ).body.id as string;
    await api.waitFor(p3, ['ready']);
    expect(await hostOf(d, p3)).toBe(second);
    expect(await readMark(api, p3)).toBe('');
    await api.delete(`/sessions/${p3}`);
    await d.waitGone(api, p3);
    // Saved there now, and exact again.
    expect((await api.get('/me')).body.profile).toMatchObject({ state: 'stored', exact: true });
    const [row] = await sql<{ saved_host: string }>(
      d.store,
      'SELECT saved_host FROM profiles WHERE id = $1',
      [account.profile_id],
    );
    expect(row?.saved_host).toBe(second);
  }, 120_000);

  it('forgets the saves of a host that leaves', async () => {
    const account = await d.account();
    const api = d.api(1, account.key);
    const p = (
      await api.post('/sessions', { body: { profile_id: account.profile_id, timeout_seconds: 120 } })
    ).body.id as string;
    await api.waitFor(p, ['ready']);
    const host = await hostOf(d, p);
    await api.delete(`/sessions/${p}`);
    await d.waitGone(api, p);
    expect((await api.get('/me')).body.profile.state).toBe('stored');
    const leaving = d.hosts.find((h) => h.line.host === host)!;
    await leaving.stop();
    expect((await api.get('/me')).body.profile).toMatchObject({ state: 'empty', exact: false });
  }, 60_000);
});
