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
  ProfileReset,
} from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import { accountView } from '../runtime/views.js';
import { ownerUid } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS } from './common.js';
import { revokeKeySpec } from './route-specs.js';
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
      return accountView(a, profile, { active, billingMode: runtime.activeBillingMode(uid) });
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

  app.delete('/me/keys/:key_hash', revokeKeySpec, async (req) => {
    const uid = ownerUid(req);
    if (!accounts.revokeKey(uid, req.params.key_hash)) {
      throw apiError(ERROR_CODES.notFound, 'No active key with this key_hash on this account.');
    }
    return { revoked: true };
  });

  app.post(
    '/me/profile/reset',
    { config: { auth: 'owner' }, schema: { response: { 200: ProfileReset, ...REFUSALS } } },
    async (req) => ({ id: runtime.resetProfile(ownerUid(req)), reset: true }),
  );
};
