#!/usr/bin/env node
/**
 * The `phonelease` command. Client commands live in src/cli/commands.ts; `server` and
 * `accounts` load the package's own `phonelease/server` entry on demand, so the client never
 * pulls in the server's dependencies unless asked to run one.
 *
 * Exit codes: 0 success, 1 failure (the service refused, could not be reached, ...),
 * 2 usage (unknown command or option, missing configuration); `lease`, which runs until it
 * is stopped, exits 130 after SIGINT and 143 after SIGTERM (see leaseCommand).
 */
import { createRequire } from 'node:module';
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
import { closestName } from '../util/args.js';
import { MAIN_USAGE, USAGE, UsageError } from './usage.js';
import { messageOf } from '../util/message.js';

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
    case 'host': {
      const { runHostCommand } = await import('phonelease/server');
      await runHostCommand(rest);
      return 0;
    }
    case 'accounts': {
      const { runAccountsCommand } = await import('phonelease/server');
      await runAccountsCommand(rest);
      return 0;
    }
    case 'dashboard': {
      const { runDashboardCommand } = await import('phonelease/server');
      await runDashboardCommand(rest);
      return 0;
    }
    case 'doctor': {
      const { runDoctorCommand } = await import('phonelease/server');
      return runDoctorCommand(rest);
    }
    case '--version':
    case '-v':
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case 'help':
    case '--help':
    case '-h':
      // `phonelease help lease` is `phonelease lease --help`.
      if (command === 'help' && rest[0] !== undefined && rest[0] !== command)
        return main([rest[0], '--help']);
      process.stdout.write(`${MAIN_USAGE}\n`);
      return 0;
    case undefined:
      // No command is a mistake (exit 2), but the usage is the answer to it.
      process.stderr.write(`${MAIN_USAGE}\n`);
      return 2;
  }
  const run = CLIENT_COMMANDS[command];
  if (!run) {
    const what = command.startsWith('-') ? `unknown option ${command}` : `unknown command "${command}"`;
    const guess = command.startsWith('-') ? null : closestName(command, COMMANDS);
    throw new UsageError(
      `${what}${guess ? ` (did you mean ${guess}?)` : ''}\n\nRun "phonelease --help" for the commands.`,
    );
  }
  return run(rest, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(redact(text)),
    env: process.env,
  });
}

const COMMANDS = [...Object.keys(USAGE), 'server', 'host', 'accounts', 'dashboard', 'doctor', 'help'];

/** The installed package's version, from its own package.json (exported as phonelease/package.json). */
function packageVersion(): string {
  return (createRequire(import.meta.url)('phonelease/package.json') as { version: string }).version;
}

function describe(err: unknown): { message: string; code: number } {
  if (err instanceof UsageError || (err instanceof Error && err.name === 'UsageError'))
    return { message: err.message, code: 2 };
  const errCode = (err as { code?: unknown } | null | undefined)?.code;
  if (typeof errCode === 'string' && errCode.startsWith('ERR_PARSE_ARGS'))
    return { message: (err as Error).message, code: 2 };
  if (err instanceof ConfigurationError) return { message: err.message, code: 2 };
  if (err instanceof PhoneleaseError) return { message: `${err.message} [${err.code}]`, code: 1 };
  return { message: messageOf(err), code: 1 };
}

/**
 * The library's messages point at PHONELEASE_BASE_URL ("check PHONELEASE_BASE_URL and that
 * the service is running"). A user who gave --base-url should be pointed at that flag: the
 * variable may not even be set, or be set to something the flag overrode.
 */
function inTermsOfTheFlagsUsed(message: string, argv: string[]): string {
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  if (!options.some((arg) => arg === '--base-url' || arg.startsWith('--base-url='))) return message;
  return message
    .replaceAll('set PHONELEASE_BASE_URL to', 'pass --base-url')
    .replaceAll('PHONELEASE_BASE_URL', '--base-url');
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const { message, code } = describe(err);
    process.stderr.write(redact(`phonelease: ${inTermsOfTheFlagsUsed(message, argv)}`) + '\n');
    process.exitCode = code;
  },
);
