/**
 * Option parsing shared by every `phonelease` command, the client's (src/cli) and the
 * server's (server/cli.ts): both import it from here, neither through the other's CLI.
 *
 * Node's parseArgs in strict mode answers a typo with text meant for programmers
 * ("Unknown option '--profle'. To specify a positional argument starting with a '-' ...")
 * and calls `--timeout -5` ambiguous, although `--timeout=-5` is a plain out-of-range value.
 * So parseArgs first runs non-strict, for its tokens, and this module checks them itself:
 *
 * - an unknown option is named, with the closest known one ("did you mean --profile?");
 * - a negative number after an option is that option's value, so the command's own range
 *   check answers the same way for `--timeout -5` as for `--timeout=-5`;
 * - a missing value, or a value given to a flag that takes none, is said as such.
 *
 * The checked tokens are then parsed again, strictly, so each command gets typed values.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake in the command line: the command prints it and exits with code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * What follows a usage error: the command's synopsis (its usage up to the first blank line)
 * and where the rest is, rather than the whole help text after every typo.
 */
export function usageHint(command: string, usage: string): string {
  const synopsis = usage.split(/\n\s*\n/)[0] ?? usage;
  return `${synopsis}\nRun "phonelease ${command} --help" for details.`;
}

/** `{ name: { type, short?, default? } }`, as parseArgs takes it (Node does not export the name). */
export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** What parseArgs returns for these options, parsed strictly: typed values and positionals. */
export type ParsedCommandLine<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: true }>
>;

/** The command as its user types it ("lease", "accounts create") and its usage text. */
export interface CommandUsage {
  command: string;
  usage: string;
}

export function parseCommandLine<O extends OptionsConfig>(
  argv: string[],
  options: O,
  usage: CommandUsage,
): ParsedCommandLine<O> {
  const { tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const fail = (message: string) => new UsageError(`${message}\n\n${usageHint(usage.command, usage.usage)}`);
  const checked: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      checked.push(token.value);
      continue;
    }
    if (token.kind === 'option-terminator') {
      checked.push('--');
      continue;
    }
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    // Non-strict parseArgs names an unknown `-x` "x": it is only known if x is a short form.
    const known =
      spec !== undefined && (token.rawName.startsWith('--') || spec.short === token.rawName.slice(1));
    if (!known) {
      const guess = closestOption(token.rawName, options);
      throw fail(`unknown option ${token.rawName}${guess ? ` (did you mean ${guess}?)` : ''}`);
    }
    if (spec.type === 'boolean') {
      if (token.value !== undefined) throw fail(`${token.rawName} takes no value (got "${token.value}")`);
      checked.push(`--${token.name}`);
      continue;
    }
    // A separate value that looks like another option is most likely one: the value is
    // missing. Negative numbers are values (the range check then says what is allowed).
    if (token.value === undefined || (!token.inlineValue && /^-(?!\d)/.test(token.value))) {
      throw fail(
        token.value === undefined
          ? `${token.rawName} needs a value`
          : `${token.rawName} needs a value (${token.value} is an option; a value that starts with "-" goes as ${token.rawName}=VALUE)`,
      );
    }
    checked.push(`--${token.name}=${token.value}`);
  }
  return parseArgs({ args: checked, options, strict: true, allowPositionals: true });
}

/** The known option closest to a mistyped one, as `--name`, or null when none is close. */
function closestOption(rawName: string, options: OptionsConfig): string | null {
  const typed = rawName.replace(/^-+/, '').toLowerCase();
  if (typed.length < 2) return null;
  const names = Object.keys(options);
  // A cut-short name (--start for --start-timeout) is meant as that option.
  const prefixed = typed.length >= 3 ? names.filter((name) => name.startsWith(typed)) : [];
  if (prefixed.length === 1) return `--${prefixed[0]}`;
  const name = closestName(typed, names);
  return name ? `--${name}` : null;
}

/**
 * The name a mistyped one most likely meant, allowing one edit per three characters:
 * profle -> profile, prot -> port, leas -> lease, but not me -> json. Null when none is close.
 */
export function closestName(typed: string, names: readonly string[]): string | null {
  let best: { name: string; distance: number } | null = null;
  for (const name of names) {
    const distance = editDistance(typed, name);
    if (!best || distance < best.distance) best = { name, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : null;
}

/**
 * Edit distance counting insertions, deletions, substitutions and swaps of neighbours
 * (the typos people make), case-insensitive.
 */
function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) =>
    Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const row = d[i]!;
      const above = d[i - 1]!;
      row[j] = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1])
        row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[x.length]![y.length]!;
}
