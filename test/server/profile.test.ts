import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { delegatePhone, slowShutdownBackend, wrapBackend } from '../support/backends.js';
import { serverPerTest } from '../support/server.js';

const server = serverPerTest();

describe('profile phone', () => {
  it('has one holder at a time, is saved when the session ends, and can be reset when free', async () => {
    const t = await server();
    const profileId = t.account.profile_id;
    const a = await t.api.post('/sessions', { body: { profile_id: profileId } });
    expect(a.status).toBe(202);
    expect(a.body.profile_id).toBe(profileId);
    expect((await t.api.get('/me')).body.profile).toMatchObject({
      id: profileId,
      session: a.body.id,
      state: 'empty',
    });

    const second = await t.api.post('/sessions', { body: { profile_id: profileId } });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'profile_running', session: a.body.id });
    const reset = await t.api.post('/me/profile/reset');
    expect(reset.status).toBe(409);
    expect(reset.body).toMatchObject({ code: 'profile_running', session: a.body.id });
    // A temporary phone is not affected by the profile hold.
    const temp = await t.api.post('/sessions');
    expect(temp.status).toBe(202);
    expect(temp.body.profile_id).toBeNull();

    await t.api.waitFor(a.body.id, ['ready']);
    expect((await t.api.delete(`/sessions/${a.body.id}`)).status).toBe(200);
    const saved = (await t.api.get('/me')).body.profile;
    expect(saved).toMatchObject({ id: profileId, state: 'stored', session: null, exact: true });
    expect(Number.isInteger(saved.saved_at)).toBe(true);

    const b = await t.api.post('/sessions', { body: { profile_id: profileId } });
    expect(b.status).toBe(202);
    await t.api.delete(`/sessions/${b.body.id}`);

    const done = await t.api.post('/me/profile/reset');
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ id: profileId, reset: true });
    const empty = (await t.api.get('/me')).body.profile;
    expect(empty).toMatchObject({ state: 'empty', session: null });
    expect(Number.isInteger(empty.saved_at)).toBe(true);
    expect(empty.saved_at).toBeGreaterThanOrEqual(saved.saved_at);
  });

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

  it("refuses another account's profile id like an unknown one", async () => {
    const t = await server();
    const other = t.other();
    const r = await t.api.post('/sessions', { body: { profile_id: other.account.profile_id } });
    expect(r.status).toBe(400);
    expect((await other.api.get('/me')).body.profile.session).toBeNull();
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
