import { describe, expect, it } from 'vitest';
import { useTargets } from '../support/target.js';

// What needs a device backend in this process (slow or failing saves) is in
// profile-in-process.test.ts.
const server = useTargets().perTest;

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

  it("refuses another account's profile id like an unknown one", async () => {
    const t = await server();
    const other = await t.other();
    const r = await t.api.post('/sessions', { body: { profile_id: other.account.profile_id } });
    expect(r.status).toBe(400);
    expect((await other.api.get('/me')).body.profile.session).toBeNull();
  });
});
