/**
 * A small structured logger for the server. Lines go to stderr (stdout is reserved for
 * the one `--json` line), and every line passes through redact() so no key, grant, unlock
 * code or viewer URL is ever written.
 */
import { redact } from '../src/util/redact.js';
import type { DeviceLogger } from './devices/types.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger extends DeviceLogger {
  readonly level: LogLevel;
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
  now?: () => number;
}

/** The level asked for by PHONELEASE_LOG_LEVEL, or debug under DEBUG=phonelease:*. */
export function levelFromEnv(env: NodeJS.ProcessEnv = process.env, fallback: LogLevel = 'info'): LogLevel {
  const asked = env.PHONELEASE_LOG_LEVEL as LogLevel | undefined;
  if (asked && asked in RANK) return asked;
  if (env.DEBUG && /(^|,)\s*phonelease(:\*|:server|\*)/.test(env.DEBUG)) return 'debug';
  return fallback;
}

function formatValue(v: unknown): string {
  if (typeof v === 'string') return /[\s="]/.test(v) ? JSON.stringify(v) : v;
  if (v instanceof Error) return JSON.stringify(v.message);
  return JSON.stringify(v);
}

export function createLogger(opts: LoggerOptions = {}, bound: Record<string, unknown> = {}): Logger {
  const level = opts.level ?? 'info';
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const now = opts.now ?? Date.now;
  const emit = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < RANK[level]) return;
    const all = { ...bound, ...fields };
    const time = new Date(now()).toISOString();
    const pairs = Object.entries(all).map(([k, v]) => ` ${k}=${formatValue(v)}`);
    write(redact(`${time} ${lvl.toUpperCase().padEnd(5)} ${msg}${pairs.join('')}`));
  };
  return {
    level,
    enabled: (lvl) => RANK[lvl] >= RANK[level],
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(opts, { ...bound, ...fields }),
  };
}
