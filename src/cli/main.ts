#!/usr/bin/env node
/**
 * The `phonelease` command. Client commands live in src/; `server` and `accounts` load the
 * package's own `phonelease/server` entry on demand, so the client never pulls in the
 * server's dependencies unless asked to run one.
 */
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
    default:
      process.stderr.write(`Usage: phonelease <server|accounts> ...\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const usage = err instanceof Error && (err.name === 'UsageError' || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'));
    process.stderr.write(`phonelease: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = usage ? 2 : 1;
  },
);
