/**
 * The dashboard, served by the API it drives, on the same origin: its pages (one HTML shell
 * whose modules route by path), their assets, and the few routes the API lacks for it:
 * signing in and out, and the fleet figures operators see. Everything else the pages do goes
 * through the ordinary API with the dashboard session's JWT as the bearer credential.
 *
 * The files are plain ES modules and a stylesheet under server/dashboard/public/, served as
 * they are: no build step, nothing the quick start has to prepare. Every answer under
 * /dashboard is private, never cached, unreferred and unframeable, with a Content-Security-
 * Policy that allows only the dashboard's own scripts and styles (no inline script).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { apiError, badRequest, notFound } from '../errors.js';
import { looksLikeJwt } from '../jwt.js';
import { Fleet } from '../fleet.js';
import { bearer, ownerUid } from './auth.js';
import { REFUSALS } from './common.js';
import { partMessages } from './refusals.js';
import type { RoutePlugin } from './types.js';

/** The headers of every answer under /dashboard. */
export const DASHBOARD_HEADERS = {
  'cache-control': 'private, no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Scripts and styles only from the dashboard's own files; the owner viewer embedded from
  // the same origin; and nothing may frame the dashboard itself.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
} as const;

/** The pages' paths under /dashboard/ (the shell routes among them by location.pathname). */
export const DASHBOARD_PAGES = [
  'sign-in',
  'sessions',
  'sessions/:sid',
  'history',
  'keys',
  'profile',
  'account',
  'fleet',
];

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};
/** Path segments of an asset: no dot files, no `..`, nothing but plain names. */
const ASSET_PATH = /^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * The folder of the dashboard's files: beside this module when run from source (tsx), and at
 * the package root's server/dashboard/public/ when run from dist/ (package.json "files" ships it).
 */
export function publicDirectory(): string {
  const candidates = ['../dashboard/public/', '../../../server/dashboard/public/'].map((rel) =>
    fileURLToPath(new URL(rel, import.meta.url)),
  );
  return candidates.find((dir) => existsSync(dir)) ?? candidates[0]!;
}

const NOT_FOUND_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Page not found · phonelease</title></head>
<body><main><h1>Page not found</h1><p>There is no dashboard page here.</p>
<p><a href="/dashboard/sessions">Go to Sessions</a></p></main></body></html>
`;

/** Pages and files are not API routes: the OpenAPI document leaves them out. */
const PAGE = { config: { auth: 'public' }, schema: { hide: true } } as const;

const SignInBody = Type.Union([
  Type.Object({ link: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
  Type.Object({ key: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
]);

const SignedIn = Type.Object({
  token: Type.String(),
  expires_at: Type.Integer(),
  account: Type.Object({
    uid: Type.String(),
    email: Type.String(),
    name: Type.String(),
    operator: Type.Boolean(),
  }),
});

export const dashboardRoutes: RoutePlugin = async (app, { deps }) => {
  const { directory, signIns } = deps;
  const root = resolve(publicDirectory());

  // Every answer of this plugin, refusals included (the hook runs for errors too).
  app.addHook('onSend', (_req, reply, payload, done) => {
    reply.headers(DASHBOARD_HEADERS);
    done(null, payload);
  });

  const sendFile = async (reply: FastifyReply, name: string, status = 200) => {
    const file = resolve(root, name);
    const type = CONTENT_TYPES[extname(file)] ?? (file.endsWith('.html') ? 'text/html; charset=utf-8' : null);
    // resolve() has already collapsed any `..`: what is left must still be inside the folder.
    if (type === null || !file.startsWith(root + sep)) throw notFound('No such dashboard file.');
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EISDIR') throw notFound('No such dashboard file.');
      throw err;
    }
    return reply.code(status).type(type).send(body);
  };

  app.get('/dashboard', PAGE, (_req, reply) => reply.redirect('/dashboard/sessions', 302));

  for (const page of DASHBOARD_PAGES) {
    app.get(`/dashboard/${page}`, PAGE, (_req, reply) => sendFile(reply, 'index.html'));
  }

  app.get('/dashboard/assets/*', PAGE, (req, reply) => {
    const name = (req.params as { '*': string })['*'];
    if (!ASSET_PATH.test(name)) throw notFound('No such dashboard file.');
    return sendFile(reply, name);
  });

  app.post(
    '/dashboard/api/sign-in',
    {
      config: { auth: 'public' },
      schema: { body: SignInBody, response: { 200: SignedIn, ...REFUSALS } },
      schemaErrorFormatter: partMessages({
        body: 'Send {"link": "<the token after #token= in the sign-in link>"} or {"key": "pck_..."} as JSON.',
      }),
    },
    async (req) => {
      const body = req.body;
      if ('link' in body) return signIns.signInWithLink(body.link);
      const uid = body.key.startsWith('pck_') ? await directory.authenticate(body.key) : null;
      if (!uid)
        throw apiError(
          ERROR_CODES.unauthenticated,
          'The API key is not valid (unknown or revoked); check it, or ask for a sign-in link: phonelease dashboard --email <your email>.',
        );
      return signIns.signIn(uid);
    },
  );

  app.post(
    '/dashboard/api/sign-out',
    { config: { auth: 'owner' }, schema: { response: { 204: Type.Null(), ...REFUSALS } } },
    async (req, reply) => {
      const token = bearer(req) ?? '';
      if (!looksLikeJwt(token))
        throw badRequest(
          'Sign-out ends a dashboard session: send its token. An API key is revoked with DELETE /me/keys/{key_hash}.',
        );
      await signIns.signOut(token);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/dashboard/api/fleet',
    { config: { auth: 'owner' }, schema: { response: { 200: Fleet, ...REFUSALS } } },
    async (req) => {
      const { account } = await directory.account(ownerUid(req));
      // Not a 403: to an account that is not an operator, the fleet does not exist.
      if (account.operator !== 1) throw notFound('No such dashboard resource.');
      return deps.fleet();
    },
  );

  // Anything else under /dashboard: the API's error body under /dashboard/api/, a page otherwise.
  app.all('/dashboard/*', PAGE, (req, reply) => {
    if (req.url.startsWith('/dashboard/api/')) throw notFound('No such dashboard API route.');
    return reply.code(404).type('text/html; charset=utf-8').send(NOT_FOUND_PAGE);
  });
};
