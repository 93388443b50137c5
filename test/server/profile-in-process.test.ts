/**
 * Profile phone contract tests that need a device backend in this process: a save that is
 * slow, and one that keeps failing (with an injected clock for the retries). The rest of the
 * profile contract is in profile.test.ts, which also runs against a deployment.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { delegatePhone, slowShutdownBackend, wrapBackend } from '../support/backends.js';
import { serverPerTest } from '../support/server.js';

const server = serverPerTest();

describe('a profile phone whose save is slow', () => {
  it('stays held while its save is still running', async () => {
    const t = await server({ backend: slowShutdownBackend(2000) });
    const profileId = t.account.profile_id;
    const a = (await t.api.post('/sessions', { body: { profile_id: profileId } })).body;
    await t.api.waitFor(a.id, ['ready']);
    expect((await t.api.delete(`/sessions/${a.id}`)).status).toBe(202);
    const during = await t.api.post('/sessions', { body: { profile_id: profileId } });
    expect(during.status).toBe(409);
    expect(during.body).toMatchObject({ code: 'profile_running', session: a.id });
    expect((await t.api.get('/me')).body.profile.session).toBe(a.id);
    await t.api.waitGone(a.id);
    expect((await t.api.post('/sessions', { body: { profile_id: profileId } })).status).toBe(202);
  });
});

describe('a profile phone whose save keeps failing', () => {
  it('ends the session, stops the phone without saving, and keeps the previous save marked inexact', async () => {
    const clock = new ManualClock();
    const stopped: Array<string | null> = [];
    let failSaves = false;
    const backend = wrapBackend(createVirtualBackend({ bootMs: 0 }), (phone) =>
      delegatePhone(phone, {
        async shutdown(options) {
          if (options.saveTo && failSaves) throw new Error('disk full');
          stopped.push(options.saveTo);
          await phone.shutdown(options);
        },
      }),
    );
    const t = await server({ clock, backend });
    const profileId = t.account.profile_id;
    // A first session saves normally.
    const first = (await t.api.post('/sessions', { body: { profile_id: profileId } })).body;
    await t.api.waitFor(first.id, ['ready']);
    await t.api.delete(`/sessions/${first.id}`);
    await t.api.waitGone(first.id);
    const savedAt = (await t.api.get('/me')).body.profile.saved_at;
    expect(savedAt).not.toBeNull();

    failSaves = true;
    const second = (await t.api.post('/sessions', { body: { profile_id: profileId } })).body;
    await t.api.waitFor(second.id, ['ready']);
    expect((await t.api.delete(`/sessions/${second.id}`)).status).toBe(202);
    expect((await t.api.get(`/sessions/${second.id}`)).body.cleanup_status).toBe('allocation_uncertain');
    // Four retries, five seconds apart.
    for (let i = 0; i < 5; i++) await clock.advance(5_000);
    await t.api.waitGone(second.id);
    expect(stopped.at(-1)).toBeNull();
    expect((await t.api.get('/me')).body.profile).toMatchObject({
      state: 'stored',
      exact: false,
      session: null,
      saved_at: savedAt,
    });
    // The previous save still restores: the next profile session starts.
    failSaves = false;
    const third = (await t.api.post('/sessions', { body: { profile_id: profileId } })).body;
    expect((await t.api.waitFor(third.id, ['ready', 'error'])).state).toBe('ready');
  });
});
