/**
 * The client commands of `phonelease`. Each parses its own arguments, talks to the service
 * through PhoneSessionClient (or leasePhone) and writes human output, or one JSON document
 * with --json. Secrets are printed only where the user asked for them: the viewer URL of
 * `lease` and the new key of `keys create`.
 */
import { constants as osConstants } from 'node:os';
import { resolve } from 'node:path';
import type { Account, HistoryRecord, Session } from '../api/schemas.js';
import { PhoneSessionClient } from '../client.js';
import { AdbError, ConfigurationError, NotFoundError } from '../errors.js';
import { waitForCleanup } from '../end-session.js';
import { leasePhone, type Lease } from '../lease/lease.js';
import { stderrLogger } from '../util/log.js';
import { sleep } from '../util/time.js';
import { messageOf } from '../util/message.js';
import { parseCommandLine, type OptionsConfig } from '../util/args.js';
import { dollars, fields, relative, span, table, when } from './format.js';
import { USAGE, UsageError, usageHint } from './usage.js';

export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
}

const COMMON = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  'base-url': { type: 'string' },
} as const;

/** Parses a client command's options (see args.ts); usage errors end with its synopsis. */
function parse<const O extends OptionsConfig>(command: string, argv: string[], options: O) {
  return parseCommandLine(argv, options, { command, usage: USAGE[command] ?? '' });
}

/** A usage error of `command`: what is wrong, then the command's synopsis. */
function usageError(command: string, message: string): UsageError {
  return new UsageError(`${message}\n\n${usageHint(command, USAGE[command] ?? '')}`);
}

/**
 * A person is waiting at the terminal: retry briefly (a blip), then say what is wrong,
 * instead of the library's 30 s budget for unattended runs.
 */
const CLI_RETRY = { maxRetries: 2, budgetMs: 5_000 };

/**
 * The client for a command. Missing configuration is reported here, in the command line's
 * terms (environment variables, --base-url, where a key comes from), not the library's
 * ("pass { baseUrl, apiKey } to the client").
 */
function clientFor(values: { 'base-url'?: string | boolean | undefined }, io: CommandIo): PhoneSessionClient {
  const flagUrl = typeof values['base-url'] === 'string' ? values['base-url'] : undefined;
  const missing: string[] = [];
  if (!flagUrl && !io.env.PHONELEASE_BASE_URL)
    missing.push(
      'the service address: set PHONELEASE_BASE_URL, or pass --base-url (e.g. --base-url http://127.0.0.1:8080)',
    );
  if (!io.env.PHONELEASE_API_KEY)
    missing.push('an API key: set PHONELEASE_API_KEY (a key is never taken from the command line)');
  if (missing.length > 0) {
    const what = missing.length === 1 ? missing[0] : `configuration:\n  - ${missing.join('\n  - ')}`;
    throw new ConfigurationError(`missing ${what}${io.env.PHONELEASE_API_KEY ? '' : `\n${GET_A_KEY}`}`);
  }
  if (flagUrl !== undefined && !isHttpUrl(flagUrl))
    throw new UsageError(
      `--base-url must be an http(s) URL such as http://127.0.0.1:8080 (got "${flagUrl}")`,
    );
  return new PhoneSessionClient({ env: io.env, retry: CLI_RETRY, ...(flagUrl ? { baseUrl: flagUrl } : {}) });
}

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

const GET_A_KEY = `To get a key: "phonelease keys create LABEL" makes another one for an account you already
have a key for; on the server's machine, "phonelease accounts create" makes an account and
its first key (a new server also writes its first key to first-key.txt in its data directory).`;

function positiveInt(name: string, value: string | boolean | undefined): number | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`--${name} must be a whole number of at least 1 (got "${value}")`);
  return Number(value);
}

const json = (io: CommandIo, value: unknown) => io.out(JSON.stringify(value, null, 2) + '\n');

/** A session without the fields that grant access (for listings and --json). */
function publicSession(
  s: Session,
): Omit<Session, 'watch_url' | 'adb'> & { adb?: { host: string; port: number; expires_at: number } } {
  const { watch_url: _watch, adb, ...rest } = s;
  return { ...rest, ...(adb ? { adb: { host: adb.host, port: adb.port, expires_at: adb.expires_at } } : {}) };
}

// ---------------------------------------------------------------------------------------

export async function sessionsCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('sessions', argv, COMMON);
  if (values.help) return help('sessions', io);
  if (positionals.length > 0) throw usageError('sessions', 'sessions takes no arguments');
  const sessions = await clientFor(values, io).listSessions();
  if (values.json) {
    json(io, sessions.map(publicSession));
    return 0;
  }
  if (sessions.length === 0) {
    io.out('No live sessions.\n');
    return 0;
  }
  io.out(
    table(
      ['SESSION', 'STATE', 'DEVICE', 'AGE', 'EXPIRES'],
      sessions.map((s) => [
        s.id,
        s.state === 'provisioning' && s.location
          ? `${s.location}`
          : s.cleanup_pending
            ? `${s.state} (cleanup pending)`
            : s.state,
        s.device ?? '-',
        span(s.age_s),
        relative(s.expires_at),
      ]),
    ),
  );
  return 0;
}

export async function endCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('end', argv, COMMON);
  if (values.help) return help('end', io);
  if (positionals.length !== 1) throw usageError('end', 'end takes exactly one session id');
  const sid = positionals[0]!;
  const client = clientFor(values, io);
  let released: boolean;
  try {
    // Asked directly (not through endAndConfirm) so that an unknown id is an error here.
    released = (await client.endSession(sid)).released;
  } catch (error) {
    if (error instanceof NotFoundError) {
      io.err(`phonelease: no live session ${sid} on this account (already ended, or never existed)\n`);
      return 1;
    }
    throw error;
  }
  const confirmed = released || (await waitForCleanup(client, sid, null, 15_000).catch(() => false));
  if (values.json) json(io, { session: sid, ended: true, cleanup_confirmed: confirmed });
  else
    io.out(
      confirmed
        ? `Ended ${sid}; cleanup confirmed.\n`
        : `Ended ${sid}; cleanup is still pending on the service.\n`,
    );
  return confirmed ? 0 : 1;
}

export async function historyCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('history', argv, {
    ...COMMON,
    limit: { type: 'string' },
    all: { type: 'boolean', default: false },
  });
  if (values.help) return help('history', io);
  if (positionals.length > 0) throw usageError('history', 'history takes no arguments');
  const limit = positiveInt('limit', values.limit);
  if (limit !== undefined && values.all) throw usageError('history', 'use --limit or --all, not both');
  const client = clientFor(values, io);
  let records: HistoryRecord[];
  if (values.all || (limit !== undefined && limit > 100)) {
    records = [];
    for await (const r of client.iterateHistory({ pageSize: 100 })) {
      records.push(r);
      if (limit !== undefined && records.length >= limit) break;
    }
  } else {
    records = (await client.history()).slice(0, limit ?? 100);
  }
  if (values.json) {
    json(io, records);
    return 0;
  }
  if (records.length === 0) {
    io.out('No finished sessions.\n');
    return 0;
  }
  io.out(
    table(
      ['SESSION', 'ENDED', 'REASON', 'USED', 'COST', 'DEVICE'],
      records.map((r) => [
        r.sid,
        when(r.ended),
        r.end_reason,
        `${r.usage_minutes} min`,
        dollars(r.cost_cents),
        r.device,
      ]),
    ),
  );
  return 0;
}

export async function meCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('me', argv, COMMON);
  if (values.help) return help('me', io);
  if (positionals.length > 0) throw usageError('me', 'me takes no arguments');
  const me: Account = await clientFor(values, io).me();
  if (values.json) {
    json(io, me);
    return 0;
  }
  io.out(
    fields([
      ['account', `${me.uid} (${me.name}, ${me.email})`],
      ['environment', me.environment],
      [
        'billing',
        me.billing_mode === 'metered' ? `metered, ${dollars(me.price_cents_per_minute)}/min` : 'disabled',
      ],
      ['balance', dollars(me.balance_cents)],
      [
        'sessions',
        `${me.active_session_count} of ${me.session_limit} in use (${me.available_session_slots} free)`,
      ],
      ['can rent', me.can_rent ? 'yes' : `no: ${me.rent_blocked_reason ?? 'rentals are not enabled'}`],
      [
        'profile',
        `${me.profile.id} (${me.profile.state}${me.profile.session ? `, held by ${me.profile.session}` : ''})`,
      ],
    ]),
  );
  return 0;
}

export async function keysCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('keys', argv, COMMON);
  if (values.help) return help('keys', io);
  const [sub, ...rest] = positionals;
  // Built once the subcommand is known to be valid: a typo is a usage error first.
  const client = () => clientFor(values, io);
  switch (sub) {
    case 'create': {
      if (rest.length !== 1 || !rest[0]) throw usageError('keys', 'keys create takes one LABEL');
      const created = await client().createKey(rest[0]);
      if (values.json) json(io, created);
      else {
        io.out(`${created.key}\n`);
        io.err(
          `Created key ${created.hint} (${created.label}). This is the only time it is shown: store it now.\n`,
        );
      }
      return 0;
    }
    case 'list': {
      if (rest.length > 0) throw usageError('keys', 'keys list takes no arguments');
      const keys = await client().listKeys();
      if (values.json) json(io, keys);
      else
        io.out(
          table(
            ['HASH', 'HINT', 'LABEL', 'CREATED'],
            keys.map((k) => [k.key_hash, k.hint, k.label, when(k.created)]),
          ) || 'No active keys.\n',
        );
      return 0;
    }
    case 'revoke': {
      if (rest.length !== 1 || !/^[a-f0-9]{64}$/.test(rest[0] ?? '')) {
        throw usageError(
          'keys',
          'keys revoke takes one key HASH (64 hex characters, from "phonelease keys list")',
        );
      }
      await client().revokeKey(rest[0]!);
      if (values.json) json(io, { key_hash: rest[0], revoked: true });
      else io.out(`Revoked key ${rest[0]}.\n`);
      return 0;
    }
    default:
      throw usageError('keys', sub ? `unknown keys command "${sub}"` : 'keys needs a command');
  }
}

/**
 * `phonelease lease`: a phone for a person. Stays in the foreground with the tunnel open;
 * Ctrl-C (or SIGTERM) ends the session and confirms cleanup, then exits with the shell's
 * code for that signal (130, 143), whether the phone was still starting or ready.
 */
export async function leaseCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse('lease', argv, {
    ...COMMON,
    profile: { type: 'boolean', default: false },
    app: { type: 'string', multiple: true },
    'no-grant': { type: 'boolean', default: false },
    timeout: { type: 'string' },
    'start-timeout': { type: 'string' },
    record: { type: 'string' },
  });
  if (values.help) return help('lease', io);
  if (positionals.length > 0) throw usageError('lease', 'lease takes no arguments');
  const timeoutSeconds = positiveInt('timeout', values.timeout) ?? 3600;
  const startTimeoutMs = (positiveInt('start-timeout', values['start-timeout']) ?? 180) * 1000;
  if (values.record === '') throw usageError('lease', '--record takes a FILE to write the video to');
  const record = typeof values.record === 'string' ? resolve(values.record) : null;
  const client = clientFor(values, io);
  const logger = stderrLogger();

  // Ctrl-C during the start cancels it (the lease ends what it made); after, it ends the lease.
  const stop = new AbortController();
  const stopped: { by: NodeJS.Signals | null } = { by: null };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopped.by) {
      // A second signal: the user will not wait. The server's deadline ends the phone.
      io.err(`phonelease: ${signal} again, exiting without waiting for the session to end\n`);
      process.exit(signalExitCode(signal));
    }
    stopped.by = signal;
    io.err(`phonelease: ${signal}, ending the session (Ctrl-C again to exit at once)\n`);
    stop.abort(new Error(`Stopped by ${signal}.`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    let phone: Lease;
    try {
      phone = await leasePhone({
        client,
        profile: values.profile === true,
        apps: values.app ?? [],
        grantPermissions: values['no-grant'] !== true,
        timeoutSeconds,
        startTimeoutMs: Math.min(startTimeoutMs, timeoutSeconds * 1000),
        logger,
        signal: stop.signal,
        // This command handles the signals itself (to report and choose the exit code); the reaper stays on.
        handleSignals: false,
      });
    } catch (error) {
      // Stopped during the start: the lease ended what the start made and said so.
      if (!stopped.by) throw error;
      return signalExitCode(stopped.by);
    }
    let why: 'signal' | 'gone';
    try {
      if (record !== null && !stop.signal.aborted) await phone.startRecording();
      // A signal that came as the phone became ready: end it without showing it first.
      why = stop.signal.aborted
        ? 'signal'
        : await holdPhone(phone, client, values.json === true, io, stop.signal);
      if (record !== null) await saveRecording(phone, record, why, io);
    } finally {
      // The phone ends before the command returns, whatever happened; the lease's logger
      // says how the end went.
      await phone.end();
    }
    if (why === 'gone') {
      io.err(`phonelease: session ${phone.id} ${await howItEnded(client, phone.id)}; the phone is gone.\n`);
      return 1;
    }
    return signalExitCode(stopped.by ?? 'SIGINT');
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `--record FILE`: the video of the whole lease, saved before the phone ends. */
async function saveRecording(
  phone: Lease,
  file: string,
  why: 'signal' | 'gone',
  io: CommandIo,
): Promise<void> {
  if (why === 'gone') {
    io.err(
      `phonelease: the screen recording is lost: the session ended before it could be saved to ${file}\n`,
    );
    return;
  }
  try {
    const saved = await phone.stopRecording(file);
    io.err(`phonelease: screen recording saved to ${saved.path} (${saved.durationSeconds.toFixed(1)} s)\n`);
  } catch (error) {
    io.err(`phonelease: could not save the screen recording to ${file}: ${messageOf(error)}\n`);
  }
}

/** Shows a ready phone (serial, viewer URL) and waits until the user stops or the session ends. */
async function holdPhone(
  phone: Lease,
  client: PhoneSessionClient,
  asJson: boolean,
  io: CommandIo,
  signal: AbortSignal,
): Promise<'signal' | 'gone'> {
  let serial: string;
  // Why the stock adb could not be connected, when it could not: said instead of advice
  // to run a tool that is not there.
  let adbProblem: string | null = null;
  try {
    serial = await phone.adbSerial();
  } catch (error) {
    if (!(error instanceof AdbError) || error.code !== 'adb_unavailable') throw error;
    // The tunnel works without the stock adb (any adb that reaches this machine can use
    // it), so the serial is still worth printing for later.
    serial = await phone.adbSerial({ connect: false });
    adbProblem = adbMissing(error)
      ? `adb is not installed, so the phone is not connected to it. Install it (Debian/Ubuntu: sudo apt-get install adb), or set ANDROID_HOME to an Android SDK with platform-tools; then: adb connect ${serial}`
      : `the stock adb could not be run (${error.message}); once it runs: adb connect ${serial}`;
  }
  const viewer = await phone.ownerViewer();
  if (asJson) {
    io.out(
      JSON.stringify({
        session: phone.id,
        serial,
        viewer_url: viewer.url,
        device: phone.session.device,
        expires_at: phone.session.expires_at,
      }) + '\n',
    );
    // stdout holds the one JSON line; the advice goes with the progress.
    if (adbProblem) io.err(`phonelease: ${adbProblem}\n`);
  } else {
    io.out(
      fields([
        ['session', phone.id],
        ['device', phone.session.device ?? '-'],
        ['adb serial', adbProblem ? `${serial} (not connected: see below)` : serial],
        ['viewer', `${viewer.url}  (interactive; keep it to yourself)`],
        ['expires', `${when(phone.session.expires_at)} (${relative(phone.session.expires_at)})`],
      ]) +
        `\n${adbProblem ? `Note: ${adbProblem}` : `Try: adb -s ${serial} shell`}\nPress Ctrl-C to end the session.\n`,
    );
  }
  return untilStopped(client, phone.id, signal);
}

/** The shell's exit code for a process ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 0);
}

/**
 * How often a held lease asks whether its session is still live. A person who ends it from
 * another terminal (or the dashboard) should see this command notice within seconds. The
 * long poll does not help here: the service answers ?wait= at once for a ready session.
 */
const LIVENESS_POLL_MS = 2000;

/** Resolves 'signal' when the user stops, 'gone' when the session ends without us. */
async function untilStopped(
  client: PhoneSessionClient,
  sid: string,
  signal: AbortSignal,
): Promise<'signal' | 'gone'> {
  for (;;) {
    // A ref'd timer keeps the process in the foreground (the tunnel itself does not).
    const stopped = await sleep(LIVENESS_POLL_MS, signal).then(
      () => false,
      () => true,
    );
    if (stopped) return 'signal';
    try {
      const s = await client.getSession(sid, { signal });
      if (s.state !== 'ready') return 'gone';
    } catch (error) {
      if (signal.aborted) return 'signal';
      if (error instanceof NotFoundError) return 'gone';
      // The service is unreachable for a moment: keep the phone, try again later.
    }
  }
}

/** Why a session ended without this command ending it, from its history record. */
async function howItEnded(client: PhoneSessionClient, sid: string): Promise<string> {
  const record = await client.history().then(
    (records) => records.find((r) => r.sid === sid),
    () => undefined,
  );
  switch (record?.end_reason) {
    case 'released':
      return 'was ended elsewhere (phonelease end, the API or the dashboard)';
    case 'expired':
      return 'reached its deadline (raise --timeout for a longer lease)';
    case 'credit_exhausted':
      return 'was ended by the service: the account ran out of credit';
    case 'failed':
    case 'lost':
      return `was ended by the service: its phone ${record.end_reason === 'lost' ? 'was lost' : 'failed'}`;
    default:
      return 'was ended by the service (deadline passed, or ended elsewhere)';
  }
}

/** Whether the stock adb failed because there is no adb binary (rather than one that would not run). */
function adbMissing(error: AdbError): boolean {
  return (error.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

function help(command: string, io: CommandIo): number {
  io.out(`${USAGE[command]}\n`);
  return 0;
}
