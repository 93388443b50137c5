/**
 * The caller's account: GET /me, API keys (create, list, revoke) and the profile reset.
 */
import { Type } from '@sinclair/typebox';
import {
  Account,
  ApiKeyMeta,
  CreateKeyBody,
  CreatedKey,
  ERROR_CODES,
  KEY_HASH_PATTERN,
  PROVIDER,
  ProfileReset,
  Revoked,
} from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import { ownerUid } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS } from './common.js';
import { partMessages } from './refusals.js';
import type { RoutePlugin } from './types.js';

export const accountRoutes: RoutePlugin = async (app, { deps }) => {
  const { runtime, accounts, store } = deps;

  app.get(
    '/me',
    { config: { auth: 'owner' }, schema: { response: { 200: Account, ...REFUSALS } } },
    async (req) => {
      const uid = ownerUid(req);
      const a = accounts.account(uid);
      const profile = store.profileOf(uid);
      if (!profile) throw new Error(`account ${uid} has no profile row`);
      const active = runtime.activeCount(uid);
      const canRent = a.can_rent === 1;
      return {
        uid: a.uid,
        email: a.email,
        name: a.name,
        created: a.created,
        balance_cents: a.balance_cents,
        price_cents_per_minute: a.price_cents_per_minute,
        environment: a.environment,
        billing_mode: a.billing_mode,
        active_session_billing_mode: runtime.activeBillingMode(uid),
        session_create_idempotency: 'v1',
        default_provider: PROVIDER,
        session_limit: a.session_limit,
        active_session_count: active,
        available_session_slots: Math.max(0, a.session_limit - active),
        can_rent: canRent,
        profile: {
          id: profile.id,
          state: profile.state,
          session: profile.holder,
          exact: profile.exact === 1,
          // An integer as the contract types it (data dirs of older versions may hold null).
          saved_at: profile.saved_at ?? 0,
        },
        default_start: { platform: 'android' as const, kind: 'emulator' as const },
        startable: [{ platform: 'android' as const, kind: 'emulator' as const }],
        ...(canRent
          ? {}
          : { rent_blocked_reason: a.rent_blocked_reason ?? 'Rentals are not enabled for this account.' }),
      };
    },
  );

  app.post(
    '/me/keys',
    {
      config: { auth: 'owner' },
      schema: { body: CreateKeyBody, response: { 200: CreatedKey, ...REFUSALS } },
    },
    async (req, reply) => {
      const { key, row } = accounts.createKey(ownerUid(req), req.body.label);
      reply.headers(PRIVATE_HEADERS);
      return { key, key_hash: row.key_hash, label: row.label, hint: row.hint, created: row.created };
    },
  );

  app.get(
    '/me/keys',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(ApiKeyMeta), ...REFUSALS } } },
    async (req) => accounts.keys(ownerUid(req)),
  );

  app.delete(
    '/me/keys/:key_hash',
    {
      config: { auth: 'owner' },
      schema: {
        params: Type.Object({ key_hash: Type.String({ pattern: KEY_HASH_PATTERN }) }),
        response: { 200: Revoked, ...REFUSALS },
      },
      schemaErrorFormatter: partMessages({
        params:
          'key_hash must be the 64 lowercase hex characters of the sha256 of the key (see GET /me/keys).',
      }),
    },
    async (req) => {
      const uid = ownerUid(req);
      if (!accounts.revokeKey(uid, req.params.key_hash)) {
        throw apiError(ERROR_CODES.notFound, 'No active key with this key_hash on this account.');
      }
      return { revoked: true };
    },
  );

  app.post(
    '/me/profile/reset',
    { config: { auth: 'owner' }, schema: { response: { 200: ProfileReset, ...REFUSALS } } },
    async (req) => ({ id: runtime.resetProfile(ownerUid(req)), reset: true }),
  );
};
