/**
 * buildApp(deps): the phone-session API as a fastify instance, without listening.
 * main.ts (startServer) owns ports and processes; tests build the same app.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Ajv } from 'ajv';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  Account,
  AdbAccess,
  ApiKeyMeta,
  CreateKeyBody,
  CreateReceipt,
  CreateSessionBody,
  CreatedKey,
  ERROR_CODES,
  ErrorBody,
  HistoryPage,
  HistoryPageQuery,
  HistoryRecord,
  KEY_HASH_PATTERN,
  PHONE_OPS,
  PROVIDER,
  ProfileReset,
  REQUEST_KEY_PATTERN,
  REQUEST_KEY_RE,
  Release,
  Revoked,
  Session,
  ViewerCapability,
  API_VERSION,
  type PhoneOp,
} from '../src/api/schemas.js';
import type { Clock } from './clock.js';
import { seconds } from './clock.js';
import { ApiError, apiError, badRequest, notFound, unsupported } from './errors.js';
import type { Logger } from './log.js';
import type { AccountService } from './runtime/accounts.js';
import type { Grants } from './runtime/grants.js';
import type { LiveSession, Runtime } from './runtime/runtime.js';
import { historyView, receiptView, sessionView, type ViewContext } from './runtime/views.js';
import type { Store } from './store/store.js';
import { registerViewerPages } from './viewer/pages.js';

export interface AppDeps {
  runtime: Runtime;
  accounts: AccountService;
  grants: Grants;
  store: Store;
  clock: Clock;
  log: Logger;
  /**
   * The base URL clients use (known once the server listens). `requestHost` is the Host
   * header of the request being answered: a server on a wildcard address answers with the
   * address the client reached it by.
   */
  publicUrl(requestHost?: string): string;
  /** Where clients reach the ADB gateway (`requestHost` as for publicUrl). */
  adbEndpoint(requestHost?: string): { host: string; port: number };
  /** Origin allowed to embed viewer pages (CSP frame-ancestors); null allows none. */
  dashboardOrigin: string | null;
}

/** Bodies above this size are refused with 413 before they are parsed. */
export const BODY_LIMIT = 64 * 1024;
const MAX_WAIT_S = 30;
const HISTORY_LIMIT = 100;

type Caller = { kind: 'owner'; uid: string } | { kind: 'grant'; token: string };

const PRIVATE_HEADERS = { 'cache-control': 'private, no-store' };

const SidParams = Type.Object({ sid: Type.String() });
const errors = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  500: ErrorBody,
};

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { runtime, accounts, grants, store, clock, log } = deps;
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    // On close every connection goes, also one that connected but never sent a request
    // (an aborted client): the idle-only default would wait for Node's headers timeout.
    // Live sessions have ended by then (main.ts closes the runtime first).
    forceCloseConnections: true,
    // Session ids and keys are case-sensitive; trailing slashes are not part of the contract.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // URLs the router cannot take get the contract's error body too, without echoing the URL.
    frameworkErrors: (err, _req, reply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      void (reply as FastifyReply).code(tooLong ? 414 : 400).send({
        error: tooLong
          ? 'A path segment is longer than 200 characters; no id is that long.'
          : 'The URL is not valid (check its percent-encoding).',
        code: ERROR_CODES.invalidRequest,
      });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are validated as sent: "300" is not an integer and an unknown field is refused,
  // never stripped. Query strings and path parameters arrive as text and are coerced.
  const strict = new Ajv({
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  const coercing = new Ajv({
    coerceTypes: 'array',
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema),
  );

  // Every route's schemas, for the OpenAPI document (one schema source for all three uses).
  const routes: Array<{ method: string | string[]; url: string; schema?: unknown }> = [];
  app.addHook('onRoute', (r) => void routes.push({ method: r.method, url: r.url, schema: r.schema }));

  const ctx = (req: FastifyRequest): ViewContext => ({
    runtime,
    nowMs: clock.now(),
    watchUrl: (sid) => `${deps.publicUrl(req.headers.host)}/watch/${sid}?token=${grants.viewGrant(sid)}`,
    adbEndpoint: deps.adbEndpoint(req.headers.host),
  });

  // JSON bodies: empty is allowed (POST /sessions has an optional body); anything that
  // does not parse is a 400 with the contract's error body.
  app.removeContentTypeParser(['application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(badRequest('The request body is not valid JSON; send a JSON object.'), undefined);
    }
  });

  app.setErrorHandler(
    (
      err: Error & { statusCode?: number; code?: string; validation?: unknown[]; validationContext?: string },
      req,
      reply,
    ) => {
      const send = (e: ApiError) => reply.code(e.status).headers(e.headers).send(e.body());
      if (err instanceof ApiError) return send(err);
      if (Array.isArray(err.validation)) {
        const first = err.validation[0] as {
          keyword?: string;
          params?: Record<string, unknown>;
          instancePath?: string;
          message?: string;
        };
        if (first?.keyword === 'additionalProperties') {
          const field = String(first.params?.additionalProperty ?? 'field');
          const e = unsupported(
            `"${field}" is not supported in this request: raw capabilities and runtime resource overrides cannot be set; remove the field.`,
          );
          return send(e);
        }
        const path = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
        const where =
          path || (err.validationContext === 'body' ? 'The body' : (err.validationContext ?? 'The request'));
        return send(badRequest(`${where} ${first?.message ?? 'is invalid'}.`));
      }
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return send(
          apiError(
            ERROR_CODES.bodyTooLarge,
            `The request body is larger than ${BODY_LIMIT} bytes; send a smaller body.`,
          ),
        );
      }
      if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return send(badRequest('Send the request body as application/json.'));
      }
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
        return send(badRequest(err.message || 'Invalid request.'));
      }
      log.error('unexpected error', { method: req.method, url: req.url, error: err.stack ?? String(err) });
      return send(
        apiError(ERROR_CODES.internal, 'Unexpected service error; retry, and report it if it persists.'),
      );
    },
  );

  app.setNotFoundHandler((req, reply) => {
    const e = notFound(`No route ${req.method} ${req.url.split('?')[0]}.`);
    reply.code(e.status).send(e.body());
  });

  if (log.enabled('debug')) {
    app.addHook('onResponse', async (req, reply) => {
      log.debug('http', {
        method: req.method,
        url: req.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      });
    });
  }

  // ---------------------------------------------------------------------------------
  // Authentication

  function bearer(req: FastifyRequest): string | null {
    const h = req.headers.authorization;
    if (!h) return null;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    return m ? m[1]! : '';
  }

  function unauthenticated(message = 'Send a valid API key as "Authorization: Bearer pck_...".'): ApiError {
    return apiError(ERROR_CODES.unauthenticated, message);
  }

  // The onRequest check and the handler both ask; hash the key once per request.
  const owners = new WeakMap<FastifyRequest, string>();

  /** Owner-only endpoints: an account key, nothing else. */
  function owner(req: FastifyRequest): string {
    const known = owners.get(req);
    if (known) return known;
    const uid = authenticateOwner(req);
    owners.set(req, uid);
    return uid;
  }

  function authenticateOwner(req: FastifyRequest): string {
    const token = bearer(req);
    if (token === null) throw unauthenticated();
    if (token.startsWith('pvg_')) {
      if (grants.viewGrantSession(token) === null) throw invalidGrant();
      throw apiError(
        ERROR_CODES.forbidden,
        'A view grant can only read its own session; this call needs an account API key.',
      );
    }
    const uid = token.startsWith('pck_') ? accounts.authenticate(token) : null;
    if (!uid)
      throw unauthenticated(
        'The API key is not valid (unknown or revoked); send a valid key as "Authorization: Bearer pck_...".',
      );
    return uid;
  }

  function invalidGrant(): ApiError {
    return unauthenticated(
      'The view grant is not valid; open the session\'s current watch_url, or send an account key as "Authorization: Bearer pck_...".',
    );
  }

  const readers = new WeakMap<FastifyRequest, Caller>();

  /**
   * The three read endpoints also take a view grant, in the header or as ?token=. A forged
   * grant is a bad credential (401); a real grant of another session answers 404, exactly
   * as a session the caller cannot see.
   */
  function reader(req: FastifyRequest): Caller {
    const known = readers.get(req);
    if (known) return known;
    const caller = authenticateReader(req, String((req.params as { sid?: unknown }).sid ?? ''));
    readers.set(req, caller);
    return caller;
  }

  function authenticateReader(req: FastifyRequest, sid: string): Caller {
    const query = (req.query as { token?: unknown } | undefined)?.token;
    if (typeof query === 'string' && query !== '') {
      if (query.startsWith('pck_')) {
        throw unauthenticated(
          'Never put an account key in a URL; send it as "Authorization: Bearer pck_..." instead.',
        );
      }
      return grantCaller(query, sid);
    }
    const token = bearer(req);
    if (token?.startsWith('pvg_')) return grantCaller(token, sid);
    return { kind: 'owner', uid: owner(req) };
  }

  function grantCaller(token: string, sid: string): Caller {
    const granted = grants.viewGrantSession(token);
    if (granted === null) throw invalidGrant();
    if (granted !== sid) throw notFound();
    return { kind: 'grant', token };
  }

  // Every API route names its credential; it is checked first, before the request is parsed
  // or validated, so a bad or missing credential is a 401 whatever else is wrong.
  const OWNER = { auth: 'owner' } as const;
  const READ = { auth: 'read' } as const;
  app.addHook('onRequest', async (req) => {
    const auth = (req.routeOptions.config as { auth?: 'owner' | 'read' } | undefined)?.auth;
    if (auth === 'owner') owner(req);
    else if (auth === 'read') reader(req);
  });

  function sessionFor(caller: Caller, sid: string): LiveSession {
    return caller.kind === 'owner' ? runtime.get(caller.uid, sid) : runtime.byId(sid);
  }

  function touched(live: LiveSession): LiveSession {
    runtime.touch(live);
    return live;
  }

  // ---------------------------------------------------------------------------------
  // Sessions

  app.post(
    '/sessions',
    {
      config: OWNER,
      schema: {
        body: Type.Optional(CreateSessionBody),
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String()) }),
        response: { 202: Session, 410: ErrorBody, 503: ErrorBody, ...errors },
      },
      // No body at all means the defaults; a JSON null or array is still refused.
      preValidation: async (req) => {
        if (req.body === undefined) req.body = {};
      },
    },
    async (req, reply) => {
      const uid = owner(req);
      const key = req.headers['idempotency-key'];
      if (key !== undefined && !REQUEST_KEY_RE.test(key)) {
        throw badRequest(
          `Idempotency-Key must match ${REQUEST_KEY_PATTERN}; use one stable key per logical start.`,
        );
      }
      const body = req.body ?? {};
      const { outcome, live } = runtime.admit(uid, body, key ?? null);
      if (outcome === 'recorded') {
        const e = apiError(
          ERROR_CODES.createRequestRecorded,
          'The request was recorded but the runtime is unavailable; look it up with GET /sessions/requests/{request_key} or retry with the same key and body.',
          { id: live.row.id, ...(key ? { request_key: key } : {}), outcome: 'unknown' },
          { 'retry-after': '2' },
        );
        throw e;
      }
      const view = sessionView(live, ctx(req), { owner: true });
      return reply.code(202).send(view);
    },
  );

  app.get(
    '/sessions',
    { config: OWNER, schema: { response: { 200: Type.Array(Session), ...errors } } },
    async (req) => {
      const uid = owner(req);
      const c = ctx(req);
      return runtime.list(uid).map((l) => sessionView(l, c, { owner: true }));
    },
  );

  app.get(
    '/sessions/:sid',
    {
      config: READ,
      schema: {
        params: SidParams,
        querystring: Type.Object({
          token: Type.Optional(Type.String()),
          wait: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_S })),
        }),
        response: { 200: Session, ...errors },
      },
    },
    async (req) => {
      const caller = reader(req);
      let live = touched(sessionFor(caller, req.params.sid));
      // Only a session in transition is worth waiting on: a ready or failed session answers
      // at once (the caller cannot tell us what it last saw, so "until it changes" would
      // otherwise mean "for the whole wait" right after a fast boot).
      const wait = req.query.wait ?? 0;
      const transitional =
        live.row.state === 'provisioning' ||
        (live.row.state === 'closing' && live.row.cleanup_status !== 'complete');
      if (wait > 0 && transitional) live = await waitForChange(live, wait * 1000, req);
      return sessionView(live, ctx(req), { owner: caller.kind === 'owner' });
    },
  );

  /** Long poll: answers as soon as the session's state, location or cleanup changes, or after ms. */
  function waitForChange(live: LiveSession, ms: number, req: FastifyRequest): Promise<LiveSession> {
    const before = `${live.row.state}/${live.location}/${live.row.cleanup_status}`;
    return new Promise((resolve) => {
      const check = (changed: LiveSession) => {
        if (changed !== live) return;
        if (`${live.row.state}/${live.location}/${live.row.cleanup_status}` === before) return;
        done();
      };
      const done = () => {
        clearTimeout(timer);
        runtime.off('changed', check);
        runtime.off('closing', check);
        runtime.off('ended', check);
        req.raw.off('close', done);
        resolve(live);
      };
      const timer = setTimeout(done, ms);
      runtime.on('changed', check);
      runtime.on('closing', check);
      runtime.on('ended', check);
      req.raw.once('close', done);
    });
  }

  app.delete(
    '/sessions/:sid',
    { config: OWNER, schema: { params: SidParams, response: { 200: Release, 202: Release, ...errors } } },
    async (req, reply) => {
      const uid = owner(req);
      const { released } = await runtime.release(uid, req.params.sid);
      return reply.code(released ? 200 : 202).send({ released, cleanup_pending: !released });
    },
  );

  app.get(
    '/sessions/requests/:request_key',
    {
      config: OWNER,
      schema: {
        params: Type.Object({ request_key: Type.String() }),
        response: { 200: CreateReceipt, ...errors },
      },
    },
    async (req) => {
      const uid = owner(req);
      const key = req.params.request_key;
      if (!REQUEST_KEY_RE.test(key)) throw badRequest(`request_key must match ${REQUEST_KEY_PATTERN}.`);
      const receipt = store.receipt(uid, key);
      const row = receipt ? store.session(receipt.sid) : undefined;
      if (!receipt || !row) {
        throw apiError(
          ERROR_CODES.notFound,
          'No create request with this key is recorded for this account; retry the create with the same key and body (not a new key).',
        );
      }
      return receiptView(row, key);
    },
  );

  // ---------------------------------------------------------------------------------
  // Access to a running phone

  app.get(
    '/sessions/:sid/frame.png',
    {
      config: READ,
      schema: { params: SidParams, querystring: Type.Object({ token: Type.Optional(Type.String()) }) },
    },
    async (req, reply) => {
      const caller = reader(req);
      const live = sessionFor(caller, req.params.sid);
      const png = await runtime.frame(live);
      return reply
        .code(200)
        .headers({ 'content-type': 'image/png', ...PRIVATE_HEADERS })
        .send(png);
    },
  );

  const viewerUrl = (req: FastifyRequest, mode: 'owner' | 'view', live: LiveSession) => {
    runtime.requireReady(live);
    const now = seconds(clock.now());
    // A viewer URL lives at most an hour and never past the session.
    const expiresAt = Math.min(live.row.expires_at, now + 3600);
    const token = grants.issueViewer(live.row.id, mode, expiresAt);
    return { url: `${deps.publicUrl(req.headers.host)}/v/${token}`, expires_at: expiresAt };
  };

  app.get(
    '/sessions/:sid/owner-viewer',
    { config: OWNER, schema: { params: SidParams, response: { 200: ViewerCapability, ...errors } } },
    async (req, reply) => {
      const uid = owner(req);
      const live = touched(runtime.get(uid, req.params.sid));
      return reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'owner', live));
    },
  );

  app.get(
    '/sessions/:sid/viewer',
    {
      config: READ,
      schema: {
        params: SidParams,
        querystring: Type.Object({ token: Type.Optional(Type.String()) }),
        response: { 200: ViewerCapability, ...errors },
      },
    },
    async (req, reply) => {
      const caller = reader(req);
      const live = touched(sessionFor(caller, req.params.sid));
      return reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'view', live));
    },
  );

  app.get(
    '/sessions/:sid/adb',
    { config: OWNER, schema: { params: SidParams, response: { 200: AdbAccess, ...errors } } },
    async (req, reply) => {
      const uid = owner(req);
      const live = touched(runtime.get(uid, req.params.sid));
      runtime.requireReady(live);
      const r = live.row;
      reply.headers(PRIVATE_HEADERS);
      if (!r.adb_enabled || !r.adb_code) return { enabled: false };
      const { host, port } = deps.adbEndpoint(req.headers.host);
      return {
        enabled: true,
        transport: 'adb' as const,
        host,
        port,
        code: r.adb_code,
        expires_at: r.expires_at,
      };
    },
  );

  app.delete(
    '/sessions/:sid/adb',
    { config: OWNER, schema: { params: SidParams, response: { 200: Revoked, ...errors } } },
    async (req) => {
      const uid = owner(req);
      const live = runtime.get(uid, req.params.sid);
      runtime.revokeAdb(live);
      return { revoked: true };
    },
  );

  const opSchema = {
    params: Type.Object({ sid: Type.String(), op: Type.String({ maxLength: 50 }) }),
  };
  app.post('/sessions/:sid/ops/:op', { config: OWNER, schema: opSchema }, async (req, reply) => {
    const uid = owner(req);
    const op = req.params.op as PhoneOp;
    if (!(PHONE_OPS as readonly string[]).includes(op)) {
      throw apiError(
        ERROR_CODES.notFound,
        `Unknown operation "${req.params.op}"; advertised operations are listed in the session's ops.`,
      );
    }
    const live = touched(runtime.get(uid, req.params.sid));
    const phone = runtime.requireReady(live);
    switch (op) {
      case 'screen.capture': {
        const png = await runtime.frame(live);
        return reply.headers({ 'content-type': 'image/png', ...PRIVATE_HEADERS }).send(png);
      }
      case 'screen.bounds':
        return { w: phone.screen.w, h: phone.screen.h };
      case 'nav.home':
        await runtime.input(live, { type: 'key', key: 'home' });
        return { ok: true };
      case 'input.tap': {
        const body = req.body as unknown;
        if (!tapValidator(body)) {
          throw badRequest(
            'input.tap needs a JSON body {"x": integer >= 0, "y": integer >= 0} in screen pixels.',
          );
        }
        await runtime.input(live, { type: 'tap', x: body.x, y: body.y });
        return { ok: true };
      }
      case 'apps.list':
        return phone.apps();
    }
  });
  const tapValidator = (b: unknown): b is { x: number; y: number } => {
    if (!b || typeof b !== 'object' || Array.isArray(b)) return false;
    const o = b as Record<string, unknown>;
    return (
      Object.keys(o).every((k) => k === 'x' || k === 'y') &&
      Number.isInteger(o.x) &&
      Number.isInteger(o.y) &&
      (o.x as number) >= 0 &&
      (o.y as number) >= 0
    );
  };

  // ---------------------------------------------------------------------------------
  // Account

  app.get('/me', { config: OWNER, schema: { response: { 200: Account, ...errors } } }, async (req) => {
    const uid = owner(req);
    const a = accounts.account(uid);
    const profile = store.profileOf(uid)!;
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
  });

  app.post(
    '/me/keys',
    {
      config: OWNER,
      schema: { body: CreateKeyBody, response: { 200: CreatedKey, ...errors } },
    },
    async (req, reply) => {
      const uid = owner(req);
      const { key, row } = accounts.createKey(uid, req.body.label);
      reply.headers(PRIVATE_HEADERS);
      return { key, key_hash: row.key_hash, label: row.label, hint: row.hint, created: row.created };
    },
  );

  app.get(
    '/me/keys',
    { config: OWNER, schema: { response: { 200: Type.Array(ApiKeyMeta), ...errors } } },
    async (req) => {
      const uid = owner(req);
      return accounts.keys(uid);
    },
  );

  app.delete(
    '/me/keys/:key_hash',
    {
      config: OWNER,
      schema: { params: Type.Object({ key_hash: Type.String() }), response: { 200: Revoked, ...errors } },
    },
    async (req) => {
      const uid = owner(req);
      if (!new RegExp(KEY_HASH_PATTERN).test(req.params.key_hash)) {
        throw badRequest(
          'key_hash must be the 64 lowercase hex characters of the sha256 of the key (see GET /me/keys).',
        );
      }
      if (!accounts.revokeKey(uid, req.params.key_hash)) {
        throw apiError(ERROR_CODES.notFound, 'No active key with this key_hash on this account.');
      }
      return { revoked: true };
    },
  );

  app.post(
    '/me/profile/reset',
    { config: OWNER, schema: { response: { 200: ProfileReset, ...errors } } },
    async (req) => {
      const uid = owner(req);
      return { id: runtime.resetProfile(uid), reset: true };
    },
  );

  // ---------------------------------------------------------------------------------
  // History

  app.get(
    '/history',
    { config: OWNER, schema: { response: { 200: Type.Array(HistoryRecord), ...errors } } },
    async (req) => {
      const uid = owner(req);
      return store.history(uid, HISTORY_LIMIT).map((r) => historyView(r, runtime.genericDevice));
    },
  );

  app.get(
    '/history/page',
    { config: OWNER, schema: { querystring: HistoryPageQuery, response: { 200: HistoryPage, ...errors } } },
    async (req) => {
      const uid = owner(req);
      const limit = req.query.limit ?? 50;
      let after: { created: number; id: string } | undefined;
      if (req.query.cursor !== undefined) {
        after = decodeCursor(req.query.cursor);
        if (!after)
          throw badRequest('cursor is not valid; pass next_cursor from the previous page unchanged.');
      }
      const rows = store.history(uid, limit + 1, after);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => historyView(r, runtime.genericDevice)),
        next_cursor: rows.length > limit && last ? encodeCursor(last.created, last.id) : null,
      };
    },
  );

  app.get('/openapi.json', async () => openApiDocument(routes));

  registerViewerPages(app, deps);

  await app.ready();
  return app;
}

function encodeCursor(created: number, id: string): string {
  return Buffer.from(JSON.stringify([created, id])).toString('base64url');
}

function decodeCursor(cursor: string): { created: number; id: string } | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && Number.isInteger(v[0]) && typeof v[1] === 'string')
      return { created: v[0] as number, id: v[1] };
  } catch {
    // fall through
  }
  return undefined;
}

/** An OpenAPI 3.1 document built from the same route schemas the server validates with. */
function openApiDocument(
  routes: Array<{ method: string | string[]; url: string; schema?: unknown }>,
): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:(\w+)/g, '{$1}');
    const schema = (r.schema ?? {}) as {
      body?: unknown;
      params?: unknown;
      querystring?: unknown;
      response?: Record<string, unknown>;
    };
    for (const method of [r.method].flat()) {
      if (method === 'HEAD') continue;
      (paths[path] ??= {})[method.toLowerCase()] = {
        ...(schema.params || schema.querystring
          ? { parameters: { path: schema.params, query: schema.querystring } }
          : {}),
        ...(schema.body ? { requestBody: { content: { 'application/json': { schema: schema.body } } } } : {}),
        responses: Object.fromEntries(
          Object.entries(schema.response ?? {}).map(([status, s]) => [
            status,
            { content: { 'application/json': { schema: s } } },
          ]),
        ),
      };
    }
  }
  return { openapi: '3.1.0', info: { title: 'phonelease phone-session API', version: API_VERSION }, paths };
}
