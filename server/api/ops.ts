/**
 * Phone operations: POST /sessions/{sid}/ops/{op}, one route per advertised operation with
 * its own body and response schema, and one for any other name (404, listing where the
 * advertised ones are).
 */
import { Type } from '@sinclair/typebox';
import { AppEntry, OpDone, ScreenGeometry, TapBody, type PhoneOp } from '../../src/api/schemas.js';
import type { DevicePhone } from '../devices/types.js';
import type { LiveSession } from '../runtime/runtime.js';
import { ownerUid } from './auth.js';
import { partMessages } from './refusals.js';
import { unknownOp, unknownOpSpec } from './route-specs.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams, touched } from './common.js';
import type { RoutePlugin } from './types.js';

const TAP_USAGE = 'input.tap needs a JSON body {"x": integer >= 0, "y": integer >= 0} in screen pixels.';

export const opRoutes: RoutePlugin = async (app, { deps }) => {
  const { runtime } = deps;
  const path = (op: PhoneOp) => `/sessions/:sid/ops/${op}` as const;

  /** The caller's ready session of this request, marked as used. */
  const ready = (uid: string, sid: string): { live: LiveSession; phone: DevicePhone } => {
    const live = touched(deps, runtime.get(uid, sid));
    return { live, phone: runtime.requireReady(live) };
  };

  app.post(
    path('screen.capture'),
    // A PNG on success, so no response schema (refusals are serialised as plain JSON).
    { config: { auth: 'owner' }, schema: { params: SidParams } },
    async (req, reply) => {
      const { live } = ready(ownerUid(req), req.params.sid);
      const png = await runtime.frame(live);
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
      const { phone } = ready(ownerUid(req), req.params.sid);
      return { w: phone.screen.w, h: phone.screen.h };
    },
  );

  app.post(
    path('nav.home'),
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: OpDone, ...REFUSALS } } },
    async (req) => {
      const { live } = ready(ownerUid(req), req.params.sid);
      await runtime.input(live, { type: 'key', key: 'home' });
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
      const { live } = ready(ownerUid(req), req.params.sid);
      await runtime.input(live, { type: 'tap', x: req.body.x, y: req.body.y });
      return { ok: true };
    },
  );

  app.post(
    path('apps.list'),
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: Type.Array(AppEntry), ...REFUSALS } },
    },
    async (req) => ready(ownerUid(req), req.params.sid).phone.apps(),
  );

  app.post('/sessions/:sid/ops/:op', unknownOpSpec, async (req) => {
    throw unknownOp(req.params.op);
  });
};
