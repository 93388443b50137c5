#!/usr/bin/env node
/**
 * The `phonelease` command. Client commands live in src/cli/commands.ts; `server` and
 * `accounts` load the package's own `phonelease/server` entry on demand, so the client never
 * pulls in the server's dependencies unless asked to run one.
 *
 * Exit codes: 0 success, 1 failure (the service refused, could not be reached, ...),
 * 2 usage (unknown command or option, missing configuration).
 */
import { ConfigurationError, PhoneleaseError } from '../errors.js';
import { redact } from '../util/redact.js';
import {
  endCommand,
  historyCommand,
  keysCommand,
  leaseCommand,
  meCommand,
  sessionsCommand,
  type CommandIo,
} from './commands.js';
import { MAIN_USAGE, UsageError } from './usage.js';

const CLIENT_COMMANDS: Record<string, (argv: string[], io: CommandIo) => Promise<number>> = {
  lease: leaseCommand,
  sessions: sessionsCommand,
  end: endCommand,
  history: historyCommand,
  me: meCommand,
  keys: keysCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'server': {
      const { runServerCommand } = await import('phonelease/server');
      await runServerCommand(rest);
      return 0;
    }
    case 'accounts': {
      const { runAccountsCommand } = await import('phonelease/server');
      runAccountsCommand(rest);
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      if (command === undefined) {
        process.stderr.write(`${MAIN_USAGE}\n`);
        return 2;
      }
      process.stdout.write(`${MAIN_USAGE}\n`);
      return 0;
  }
  const run = CLIENT_COMMANDS[command];
  if (!run) throw new UsageError(`unknown command "${command}"\n\n${MAIN_USAGE}`);
  return run(rest, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(redact(text)),
    env: process.env,
  });
}

function describe(err: unknown): { message: string; code: number } {
  if (err instanceof UsageError || (err instanceof Error && err.name === 'UsageError'))
    return { message: err.message, code: 2 };
  const errCode = (err as { code?: unknown } | null | undefined)?.code;
  if (typeof errCode === 'string' && errCode.startsWith('ERR_PARSE_ARGS'))
    return { message: (err as Error).message, code: 2 };
  if (err instanceof ConfigurationError) return { message: err.message, code: 2 };
  if (err instanceof PhoneleaseError) return { message: `${err.message} [${err.code}]`, code: 1 };
  return { message: err instanceof Error ? err.message : String(err), code: 1 };
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const { message, code } = describe(err);
    process.stderr.write(redact(`phonelease: ${message}`) + '\n');
    process.exitCode = code;
  },
);
