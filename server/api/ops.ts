/**
 * Phone operations: POST /sessions/{sid}/ops/{op}, one route per advertised operation with
 * its own body and response schema, and one for any other name (404, listing where the
 * advertised ones are).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  AppEntry,
  ERROR_CODES,
  OpDone,
  ScreenGeometry,
  TapBody,
  type PhoneOp,
} from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import type { PhoneAccess } from '../runtime/directory.js';
import { readCaller } from './auth.js';
import { partMessages } from './refusals.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams } from './common.js';
import type { RoutePlugin } from './types.js';

const TAP_USAGE = 'input.tap needs a JSON body {"x": integer >= 0, "y": integer >= 0} in screen pixels.';

export const opRoutes: RoutePlugin = async (app, { deps }) => {
  const path = (op: PhoneOp) => `/sessions/:sid/ops/${op}` as const;

  /** The phone of the caller's ready session `sid`, the session marked as used. */
  const phone = async (req: FastifyRequest, sid: string): Promise<PhoneAccess> =>
    deps.directory.phone(await deps.directory.session(readCaller(req), sid, { touch: true }));

  app.post(
    path('screen.capture'),
    // A PNG on success, so no response schema (refusals are serialised as plain JSON).
    { config: { auth: 'owner' }, schema: { params: SidParams } },
    async (req, reply) => {
      const png = await (await phone(req, req.params.sid)).frame();
      return reply.headers({ 'content-type': 'image/png', ...PRIVATE_HEADERS }).send(png);
    },
  );

  app.post(
    path('screen.bounds'),
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: ScreenGeometry, ...REFUSALS } },
    },
    async (req) => {
      const { screen } = await phone(req, req.params.sid);
      return { w: screen.w, h: screen.h };
    },
  );

  app.post(
    path('nav.home'),
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: OpDone, ...REFUSALS } } },
    async (req) => {
      await (await phone(req, req.params.sid)).input({ type: 'key', key: 'home' });
      return { ok: true };
    },
  );

  app.post(
    path('input.tap'),
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, body: TapBody, response: { 200: OpDone, ...REFUSALS } },
      // One message for every way the body can be wrong, with the shape it needs.
      schemaErrorFormatter: partMessages({ body: TAP_USAGE }),
    },
    async (req) => {
      await (await phone(req, req.params.sid)).input({ type: 'tap', x: req.body.x, y: req.body.y });
      return { ok: true };
    },
  );

  app.post(
    path('apps.list'),
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: Type.Array(AppEntry), ...REFUSALS } },
    },
    async (req) => (await phone(req, req.params.sid)).apps(),
  );

  app.post(
    '/sessions/:sid/ops/:op',
    {
      config: { auth: 'owner' },
      schema: {
        params: Type.Object({ sid: Type.String(), op: Type.String({ maxLength: 50 }) }),
        response: REFUSALS,
      },
    },
    async (req) => {
      throw apiError(
        ERROR_CODES.notFound,
        `Unknown operation "${req.params.op}"; advertised operations are listed in the session's ops.`,
      );
    },
  );
};
