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
  ProfileReset,
  Revoked,
} from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import { ownerUid } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS } from './common.js';
import { partMessages } from './refusals.js';
import type { RoutePlugin } from './types.js';
import { accountView } from './views.js';

export const accountRoutes: RoutePlugin = async (app, { deps }) => {
  const { directory } = deps;

  app.get(
    '/me',
    { config: { auth: 'owner' }, schema: { response: { 200: Account, ...REFUSALS } } },
    async (req) => accountView(await directory.account(ownerUid(req))),
  );

  app.post(
    '/me/keys',
    {
      config: { auth: 'owner' },
      schema: { body: CreateKeyBody, response: { 200: CreatedKey, ...REFUSALS } },
    },
    async (req, reply) => {
      const { key, row } = await directory.createKey(ownerUid(req), req.body.label);
      reply.headers(PRIVATE_HEADERS);
      return { key, key_hash: row.key_hash, label: row.label, hint: row.hint, created: row.created };
    },
  );

  app.get(
    '/me/keys',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(ApiKeyMeta), ...REFUSALS } } },
    async (req) => directory.keys(ownerUid(req)),
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
      if (!(await directory.revokeKey(ownerUid(req), req.params.key_hash))) {
        throw apiError(ERROR_CODES.notFound, 'No active key with this key_hash on this account.');
      }
      return { revoked: true };
    },
  );

  app.post(
    '/me/profile/reset',
    { config: { auth: 'owner' }, schema: { response: { 200: ProfileReset, ...REFUSALS } } },
    async (req) => ({ id: await directory.resetProfile(ownerUid(req)), reset: true }),
  );
};
