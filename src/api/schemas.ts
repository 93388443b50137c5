/**
 * The phone-session API as TypeBox schemas: the one source for the server's request
 * validation and response serialisation, the client's types and the OpenAPI document.
 *
 * Field names and meanings follow the contract (seed-api 2026-09-14); the fields marked
 * "ours" fill what the contract leaves unnamed (see docs/api.md).
 */
import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Literals = <const T extends readonly string[]>(...values: T) =>
  Type.Union(values.map((v) => Type.Literal(v))) as TUnion<TLiteral<T[number]>[]>;

/** Interface version (the contract's date). */
export const API_VERSION = '2026-09-14';
/** The only provider; also the default. */
export const PROVIDER = 'shlut';
/** ^[A-Za-z0-9_-]{16,128}$ — idempotency keys and request keys. */
export const REQUEST_KEY_PATTERN = '^[A-Za-z0-9_-]{16,128}$';
export const REQUEST_KEY_RE = new RegExp(REQUEST_KEY_PATTERN);
/** The longest long poll: GET /sessions/{sid}?wait=S takes S up to this many seconds. */
export const MAX_WAIT_S = 30;
/** Largest expires_at the service accepts (9999-12-31T23:59:59Z). */
export const MAX_TIMESTAMP = 253_402_300_799;
/** Operations every phone advertises in `ops`. */
export const PHONE_OPS = ['screen.capture', 'screen.bounds', 'nav.home', 'input.tap', 'apps.list'] as const;
export type PhoneOp = (typeof PHONE_OPS)[number];

export const SessionState = Literals('provisioning', 'ready', 'error', 'closing');
export type SessionState = Static<typeof SessionState>;
export const BillingMode = Literals('metered', 'disabled');
export type BillingMode = Static<typeof BillingMode>;
export const Platform = Literals('android', 'ios');
export const Kind = Literals('emulator', 'device');
export const CleanupStatus = Literals('complete', 'allocation_uncertain', 'pending');
export const EndReason = Literals('released', 'expired', 'failed', 'credit_exhausted', 'lost');
export type EndReason = Static<typeof EndReason>;

export const ScreenGeometry = Type.Object({ w: Type.Integer(), h: Type.Integer() });

export const SessionAdb = Type.Object({
  host: Type.String(),
  port: Type.Integer(),
  /** Secret unlock code. */
  code: Type.String(),
  expires_at: Type.Integer(),
});

export const SessionFailure = Type.Object({ code: Type.String(), message: Type.String() });

export const Session = Type.Object({
  id: Type.String(),
  state: SessionState,
  provider: Type.String(),
  device: Nullable(Type.String()),
  close_requested: Nullable(Type.Integer()),
  cleanup_pending: Type.Boolean(),
  cleanup_status: Nullable(CleanupStatus),
  billing_mode: BillingMode,
  phone: Nullable(Type.String()),
  /** Secret read-only snapshot link (carries a view grant). */
  watch_url: Type.String(),
  screen: Nullable(ScreenGeometry),
  age_s: Type.Integer(),
  ready_age_s: Type.Integer(),
  idle_s: Type.Integer(),
  ops: Type.Array(Type.String()),
  expires_at: Type.Integer(),
  timeout_seconds: Type.Integer(),
  request_key: Type.Optional(Type.String()),
  adb: Type.Optional(SessionAdb),
  // ours: the attributes the contract describes without naming them
  profile_id: Nullable(Type.String()),
  location: Type.Optional(Literals('queued', 'booting')),
  eta_seconds: Type.Optional(Type.Integer()),
  platform: Platform,
  kind: Kind,
  failure: Type.Optional(SessionFailure),
  startup: Type.Optional(Type.Object({ source: Literals('cold', 'snapshot', 'pool') })),
});
export type Session = Static<typeof Session>;

export const CreateSessionBody = Type.Object(
  {
    profile_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIMESTAMP })),
    provider: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type CreateSessionBody = Static<typeof CreateSessionBody>;

export const Release = Type.Object({ released: Type.Boolean(), cleanup_pending: Type.Boolean() });
export type Release = Static<typeof Release>;

export const CreateReceipt = Type.Object({
  id: Type.String(),
  request_key: Type.String(),
  provider: Type.String(),
  state: SessionState,
  cleanup_complete: Type.Boolean(),
  cleanup_pending: Type.Boolean(),
});
export type CreateReceipt = Static<typeof CreateReceipt>;

export const ViewerCapability = Type.Object({ url: Type.String(), expires_at: Type.Integer() });
export type ViewerCapability = Static<typeof ViewerCapability>;

export const AdbAccess = Type.Object({
  enabled: Type.Boolean(),
  transport: Type.Optional(Type.Literal('adb')),
  host: Type.Optional(Type.String()),
  port: Type.Optional(Type.Integer()),
  code: Type.Optional(Type.String()),
  expires_at: Type.Optional(Type.Integer()),
});
export type AdbAccess = Static<typeof AdbAccess>;

export const Revoked = Type.Object({ revoked: Type.Boolean() });

export const StartOption = Type.Object({ platform: Platform, kind: Kind });

export const ProfileState = Literals('empty', 'stored', 'saving');
export const AccountProfile = Type.Object({
  id: Type.String(),
  state: ProfileState,
  session: Nullable(Type.String()),
  exact: Type.Boolean(),
  /** When the current state was stored: the last save, or the creation or reset of an empty profile. */
  saved_at: Type.Integer(),
});

export const Account = Type.Object({
  uid: Type.String(),
  email: Type.String(),
  name: Type.String(),
  created: Type.Integer(),
  balance_cents: Type.Integer(),
  price_cents_per_minute: Type.Integer(),
  environment: Type.String(),
  billing_mode: BillingMode,
  active_session_billing_mode: Nullable(BillingMode),
  session_create_idempotency: Type.String(),
  default_provider: Type.String(),
  session_limit: Type.Integer(),
  active_session_count: Type.Integer(),
  available_session_slots: Type.Integer(),
  can_rent: Type.Boolean(),
  profile: AccountProfile,
  // ours
  default_start: StartOption,
  startable: Type.Array(StartOption),
  rent_blocked_reason: Type.Optional(Type.String()),
  /** The account may see the dashboard's fleet page (`accounts create --operator`). */
  operator: Type.Optional(Type.Boolean()),
});
export type Account = Static<typeof Account>;

export const CreateKeyBody = Type.Object(
  { label: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export const CreatedKey = Type.Object({
  /** The raw key, shown only in this response. */
  key: Type.String(),
  key_hash: Type.String(),
  label: Type.String(),
  hint: Type.String(),
  created: Type.Integer(),
});
export type CreatedKey = Static<typeof CreatedKey>;

export const KEY_HASH_PATTERN = '^[a-f0-9]{64}$';
export const ApiKeyMeta = Type.Object({
  key_hash: Type.String({ pattern: KEY_HASH_PATTERN }),
  label: Type.String(),
  hint: Type.String(),
  created: Type.Integer(),
  revoked: Nullable(Type.Integer()),
});
export type ApiKeyMeta = Static<typeof ApiKeyMeta>;

export const ProfileReset = Type.Object({ id: Type.String(), reset: Type.Boolean() });

export const HistoryRecord = Type.Object({
  sid: Type.String(),
  uid: Type.String(),
  provider: Type.String(),
  device: Type.String(),
  phone: Nullable(Type.String()),
  created: Type.Integer(),
  ready: Nullable(Type.Integer()),
  last: Type.Integer(),
  ended: Type.Integer(),
  end_reason: EndReason,
  billing_mode: BillingMode,
  cost_cents: Type.Integer(),
  usage_minutes: Type.Integer(),
  billable_minutes: Type.Integer(),
  platform: Platform,
  kind: Kind,
});
export type HistoryRecord = Static<typeof HistoryRecord>;

export const HistoryPage = Type.Object({
  items: Type.Array(HistoryRecord),
  next_cursor: Nullable(Type.String()),
});
export type HistoryPage = Static<typeof HistoryPage>;

export const HistoryPageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
  },
  // Other query parameters (a cache-buster, a tracking tag) are ignored, as on every route.
);

export const TapBody = Type.Object(
  { x: Type.Integer({ minimum: 0 }), y: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export const OpDone = Type.Object({ ok: Type.Boolean() });
export const AppEntry = Type.Object({ package: Type.String(), label: Type.String() });
export type AppEntry = Static<typeof AppEntry>;

/** Every error response; only error and code are always present. */
export const ErrorBody = Type.Object({
  error: Type.String(),
  code: Type.String(),
  state: Type.Optional(Type.String()),
  unsupported: Type.Optional(Type.Boolean()),
  outcome: Type.Optional(Type.String()),
  id: Type.Optional(Type.String()),
  request_key: Type.Optional(Type.String()),
  cleanup_complete: Type.Optional(Type.Boolean()),
  balance_cents: Type.Optional(Type.Integer()),
  session: Type.Optional(Type.String()),
  session_limit: Type.Optional(Type.Integer()),
  active_session_count: Type.Optional(Type.Integer()),
  available_session_slots: Type.Optional(Type.Integer()),
  retry_after_seconds: Type.Optional(Type.Integer()),
});
export type ErrorBody = Static<typeof ErrorBody>;

/**
 * Machine codes in error bodies. The contract names session_limit, profile_running,
 * phones_busy and create_request_recorded; the rest are ours.
 */
export const ERROR_CODES = {
  invalidRequest: 'invalid_request',
  unsupported: 'unsupported',
  bodyTooLarge: 'body_too_large',
  uriTooLong: 'uri_too_long',
  headersTooLarge: 'headers_too_large',
  requestTimeout: 'request_timeout',
  unauthenticated: 'unauthenticated',
  forbidden: 'forbidden',
  rentalUnavailable: 'rental_unavailable',
  insufficientCredit: 'insufficient_credit',
  notFound: 'not_found',
  sessionLimit: 'session_limit',
  profileRunning: 'profile_running',
  idempotencyKeyReused: 'idempotency_key_reused',
  idempotencyKeyInUse: 'idempotency_key_in_use',
  sessionNotReady: 'session_not_ready',
  requestCompleted: 'request_completed',
  internal: 'internal',
  phonesBusy: 'phones_busy',
  createRequestRecorded: 'create_request_recorded',
  noFrame: 'no_frame',
  signInLinkUsed: 'sign_in_link_used',
  signInLinkExpired: 'sign_in_link_expired',
} as const;
export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];
