/**
 * Finished sessions: GET /history (the last 100) and GET /history/page (cursor pages).
 */
import { Type } from '@sinclair/typebox';
import { HistoryPage, HistoryPageQuery, HistoryRecord } from '../../src/api/schemas.js';
import { badRequest } from '../errors.js';
import { historyView } from './views.js';
import { ownerUid } from './auth.js';
import { REFUSALS } from './common.js';
import type { RoutePlugin } from './types.js';

/** GET /history answers the newest this many; older ones are paged. */
export const HISTORY_LIMIT = 100;
export const PAGE_DEFAULT = 50;

export type Cursor = { created: number; id: string };

export function encodeCursor({ created, id }: Cursor): string {
  return Buffer.from(JSON.stringify([created, id])).toString('base64url');
}

export function decodeCursor(cursor: string): Cursor | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && Number.isInteger(v[0]) && typeof v[1] === 'string')
      return { created: Number(v[0]), id: v[1] };
  } catch {
    // not base64url JSON: not a cursor of ours
  }
  return undefined;
}

export const historyRoutes: RoutePlugin = async (app, { deps }) => {
  const { directory } = deps;

  app.get(
    '/history',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(HistoryRecord), ...REFUSALS } } },
    async (req) =>
      (await directory.history(ownerUid(req), HISTORY_LIMIT)).map((r) => historyView(r, deps.genericDevice)),
  );

  app.get(
    '/history/page',
    {
      config: { auth: 'owner' },
      schema: { querystring: HistoryPageQuery, response: { 200: HistoryPage, ...REFUSALS } },
    },
    async (req) => {
      const uid = ownerUid(req);
      const limit = req.query.limit ?? PAGE_DEFAULT;
      let after: Cursor | undefined;
      if (req.query.cursor !== undefined) {
        after = decodeCursor(req.query.cursor);
        if (!after)
          throw badRequest('cursor is not valid; pass next_cursor from the previous page unchanged.');
      }
      // One more than the page tells whether another page follows.
      const rows = await directory.history(uid, limit + 1, after);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => historyView(r, deps.genericDevice)),
        next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
      };
    },
  );
};
