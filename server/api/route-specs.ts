/**
 * The declarations (credential, schemas, validation messages) of routes that both APIs
 * serve: the embedded server's and an API node's over the shared store. One declaration
 * each, so the two answer the same requests with the same refusals and the same OpenAPI.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  CreateReceipt,
  CreateSessionBody,
  ERROR_CODES,
  ErrorBody,
  KEY_HASH_PATTERN,
  MAX_WAIT_S,
  REQUEST_KEY_PATTERN,
  Revoked,
  Session,
} from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import { REFUSALS, SidParams } from './common.js';
import { partMessages } from './refusals.js';

export const createSessionSpec = {
  config: { auth: 'owner' as const },
  schema: {
    body: Type.Optional(CreateSessionBody),
    headers: Type.Object({
      'idempotency-key': Type.Optional(Type.String({ pattern: REQUEST_KEY_PATTERN })),
    }),
    response: { 202: Session, 410: ErrorBody, 503: ErrorBody, ...REFUSALS },
  },
  schemaErrorFormatter: partMessages({
    headers: `Idempotency-Key must match ${REQUEST_KEY_PATTERN}; use one stable key per logical start.`,
  }),
  // No body at all means the defaults; a JSON null or array is still refused.
  preValidation: async (req: FastifyRequest) => {
    if (req.body === undefined) req.body = {};
  },
};

export const readSessionSpec = {
  config: { auth: 'read' as const },
  schema: {
    params: SidParams,
    querystring: Type.Object({
      token: Type.Optional(Type.String()),
      wait: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_S })),
    }),
    response: { 200: Session, ...REFUSALS },
  },
};

export const receiptSpec = {
  config: { auth: 'owner' as const },
  schema: {
    // Any key: one that no create could have used has no receipt, so it is a 404 like any
    // unknown key (the contract answers this lookup only 200, 404, 401, 403 or 500).
    params: Type.Object({ request_key: Type.String() }),
    response: { 200: CreateReceipt, ...REFUSALS },
  },
};

export const noReceipt = () =>
  apiError(
    ERROR_CODES.notFound,
    'No create request with this key is recorded for this account; retry the create with the same key and body (not a new key).',
  );

export const revokeKeySpec = {
  config: { auth: 'owner' as const },
  schema: {
    params: Type.Object({ key_hash: Type.String({ pattern: KEY_HASH_PATTERN }) }),
    response: { 200: Revoked, ...REFUSALS },
  },
  schemaErrorFormatter: partMessages({
    params: 'key_hash must be the 64 lowercase hex characters of the sha256 of the key (see GET /me/keys).',
  }),
};

export const unknownOpSpec = {
  config: { auth: 'owner' as const },
  schema: {
    params: Type.Object({ sid: Type.String(), op: Type.String({ maxLength: 50 }) }),
    response: REFUSALS,
  },
};

export const unknownOp = (op: string) =>
  apiError(
    ERROR_CODES.notFound,
    `Unknown operation "${op}"; advertised operations are listed in the session's ops.`,
  );
