/**
 * The API's resources rendered from what a session directory answers.
 */
import {
  PHONE_OPS,
  PROVIDER,
  type Account,
  type CreateReceipt,
  type HistoryRecord,
  type Session,
} from '../../src/api/schemas.js';
import type { AccountSummary, SessionSnapshot } from '../runtime/directory.js';
import type { SessionRow } from '../runtime/rows.js';
import { usageMinutes } from '../runtime/rules.js';

/** What a session is rendered in: the request's moment and the URLs it reached. */
export interface ViewContext {
  nowMs: number;
  watchUrl(sid: string): string;
  /** Where clients reach this server's ADB gateway; null where each session names its device host's. */
  adbEndpoint: { host: string; port: number } | null;
  /** eta_seconds of a provisioning session. */
  eta(live: SessionSnapshot): number | undefined;
}

const OPS = [...PHONE_OPS];

export function sessionView(live: SessionSnapshot, ctx: ViewContext, opts: { owner: boolean }): Session {
  const r = live.row;
  const now = ctx.nowMs / 1000;
  const view: Session = {
    id: r.id,
    state: r.state,
    provider: r.provider,
    device: r.device,
    close_requested: r.close_requested,
    cleanup_pending: r.cleanup_status === 'pending' || r.cleanup_status === 'allocation_uncertain',
    cleanup_status: r.cleanup_status,
    billing_mode: r.billing_mode,
    phone: null,
    watch_url: ctx.watchUrl(r.id),
    screen: r.screen_w !== null && r.screen_h !== null ? { w: r.screen_w, h: r.screen_h } : null,
    age_s: Math.max(0, Math.round((ctx.nowMs - (live.admittedMs ?? r.created * 1000)) / 1000)),
    ready_age_s: r.ready !== null ? Math.max(0, Math.round((r.close_requested ?? now) - r.ready)) : 0,
    idle_s: Math.max(0, Math.round((ctx.nowMs - live.activityMs) / 1000)),
    ops: OPS,
    expires_at: r.expires_at,
    timeout_seconds: r.timeout_seconds,
    profile_id: r.profile_id,
    platform: 'android',
    kind: 'emulator',
  };
  if (r.request_key) view.request_key = r.request_key;
  if (r.state === 'provisioning' && live.location) {
    view.location = live.location;
    const eta = ctx.eta(live);
    if (eta !== undefined) view.eta_seconds = eta;
  }
  if (r.failure_code) view.failure = { code: r.failure_code, message: r.failure_message ?? '' };
  // The phone's own source when the backend says it per boot (an emulator may cold-boot
  // when it refuses a snapshot), `pool` for a phone handed from the warm pool.
  if (r.ready !== null) view.startup = { source: live.startupSource ?? 'cold' };
  // ADB is owner-only: a session read with a view grant never carries it.
  const adb = opts.owner && r.state === 'ready' ? adbAccess(live, ctx.adbEndpoint) : null;
  if (adb) view.adb = adb;
  return view;
}

/** Where and how to reach a session's ADB (its device host's gateway, else this server's), or null while it is off. */
export function adbAccess(
  live: SessionSnapshot,
  serverEndpoint: { host: string; port: number } | null | undefined,
) {
  const r = live.row;
  const endpoint = live.adbEndpoint ?? serverEndpoint;
  if (!r.adb_enabled || !r.adb_code || !endpoint) return null;
  return { host: endpoint.host, port: endpoint.port, code: r.adb_code, expires_at: r.expires_at };
}

export function receiptView(row: SessionRow, requestKey: string): CreateReceipt {
  return {
    id: row.id,
    request_key: requestKey,
    provider: row.provider,
    state: row.state,
    cleanup_complete: row.done === 1,
    cleanup_pending: row.done === 0 && row.cleanup_status !== null,
  };
}

export function historyView(row: SessionRow, genericDevice: string): HistoryRecord {
  const ended = row.ended ?? row.last;
  const usage = usageMinutes(row.ready, ended);
  return {
    sid: row.id,
    uid: row.uid,
    provider: row.provider,
    device: row.device ?? genericDevice,
    phone: null,
    created: row.created,
    ready: row.ready,
    last: row.last,
    ended,
    end_reason: row.end_reason ?? 'lost',
    billing_mode: row.billing_mode,
    cost_cents: row.cost_cents,
    usage_minutes: usage,
    billable_minutes: row.billing_mode === 'metered' ? usage : 0,
    platform: 'android',
    kind: 'emulator',
  };
}

/** GET /me: the account, its profile phone, and what its live sessions take of its slots. */
export function accountView({ account: a, profile, active, billingMode }: AccountSummary): Account {
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
    active_session_billing_mode: billingMode,
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
    operator: a.operator === 1,
    ...(canRent
      ? {}
      : { rent_blocked_reason: a.rent_blocked_reason ?? 'Rentals are not enabled for this account.' }),
  };
}
