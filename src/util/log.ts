/**
 * Where the client's words go. Two channels:
 *
 * - Progress and warnings of a lease go through a `PhoneleaseLogger` the caller may inject.
 *   The default is quiet about progress (a library should not talk unless asked) but always
 *   prints warnings to stderr: a warning means a phone may still be running and billing.
 *   Progress is turned on with `DEBUG=phonelease:lease` (or `phonelease:*`) or
 *   `PHONELEASE_PROGRESS=1`; the CLI always shows it.
 * - The HTTP exchange is printed with `DEBUG=phonelease:http` (or `phonelease:*`).
 *
 * Every line passes through redact(): no key, view grant, unlock code or viewer URL is
 * ever written, whichever channel it goes to.
 */
import { redact } from './redact.js';

export interface PhoneleaseLogger {
  /** Progress a person may want to watch: `queued (eta 12s) -> booting -> ready in 3.1s`. */
  info(message: string): void;
  /** Something went wrong but was handled; a phone may need attention. */
  warn(message: string): void;
  /** Detail for debugging (optional). */
  debug?(message: string): void;
}

/**
 * Whether `DEBUG` enables a namespace, the way the `debug` package reads it: a comma or
 * space separated list of names with `*` wildcards; a leading `-` excludes.
 */
export function debugEnabled(namespace: string, debug: string | undefined = process.env.DEBUG): boolean {
  if (!debug) return false;
  let enabled = false;
  for (const raw of debug.split(/[\s,]+/)) {
    if (!raw) continue;
    const exclude = raw.startsWith('-');
    const pattern = exclude ? raw.slice(1) : raw;
    const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    if (re.test(namespace)) {
      if (exclude) return false;
      enabled = true;
    }
  }
  return enabled;
}

/** A debug printer for `namespace`, or null when DEBUG does not enable it (callers skip the work). */
export function createDebug(
  namespace: string,
  env: NodeJS.ProcessEnv = process.env,
): ((message: string) => void) | null {
  if (!debugEnabled(namespace, env.DEBUG)) return null;
  return (message) => process.stderr.write(redact(`${namespace} ${message}`) + '\n');
}

/** Writes every level to stderr, redacted (the CLI's logger). */
export function stderrLogger(prefix = 'phonelease'): PhoneleaseLogger {
  const write = (text: string) => process.stderr.write(redact(`${prefix}: ${text}`) + '\n');
  return {
    info: write,
    warn: (m) => write(`warning: ${m}`),
    debug: createDebug('phonelease:lease') ?? undefined,
  };
}

/** A logger that drops everything (tests, or callers that report outcomes themselves). */
export const silentLogger: PhoneleaseLogger = { info: () => undefined, warn: () => undefined };

/** The default for library use: progress only when asked for, warnings always (see above). */
export function defaultLogger(env: NodeJS.ProcessEnv = process.env): PhoneleaseLogger {
  const progress = env.PHONELEASE_PROGRESS === '1' || debugEnabled('phonelease:lease', env.DEBUG);
  const write = (text: string) => process.stderr.write(redact(`phonelease: ${text}`) + '\n');
  return {
    info: progress ? write : () => undefined,
    warn: (m) => write(`warning: ${m}`),
    debug: createDebug('phonelease:lease', env) ?? undefined,
  };
}
