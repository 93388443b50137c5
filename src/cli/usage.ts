/**
 * Help texts and the usage error (exit code 2) of the `phonelease` command.
 */

// The usage error and hint live with the option parser, which the server's CLI shares.
export { UsageError, usageHint } from '../util/args.js';

const CONNECTION = `The service and key come from PHONELEASE_BASE_URL and PHONELEASE_API_KEY
(--base-url overrides the first; the key is never taken from the command line).`;

export const MAIN_USAGE = `Usage: phonelease <command> [options]

A disposable Android phone for every test.

Client commands:
  lease [--profile] [--timeout S]   Lease a phone; keep its ADB tunnel open until Ctrl-C
  sessions                          List live sessions
  end SID                           End a session and confirm its cleanup
  history [--limit N | --all]       Finished sessions, newest first
  me                                The account: balance, limits, profile
  keys create LABEL | list | revoke HASH
                                    Manage API keys

Server commands:
  server [...]                      Run the phone-session API over local phones
  host --store URL [...]            Run phones for API nodes that share a PostgreSQL store
  accounts create [...]             Create an account on a server's data directory or store
  dashboard (--email E | --uid U)   Print a one-time sign-in link to the server's dashboard
  doctor                            Check this machine for running emulators (--device emulator)

Every command takes --help, and --json for machine-readable output; "phonelease help
COMMAND" is the same as "phonelease COMMAND --help". "phonelease --version" prints the version.
${CONNECTION}

Exit codes: 0 success, 1 failure, 2 usage error.`;

export const USAGE: Record<string, string> = {
  lease: `Usage: phonelease lease [--profile] [--app PATH]... [--no-grant] [--timeout S]
  [--start-timeout S] [--record FILE] [--json]

Leases a phone, connects the stock adb to it through a local tunnel, prints its adb serial
and an interactive viewer URL, and keeps the tunnel open until Ctrl-C (or SIGTERM). Then it
ends the session, confirms its cleanup and exits 130 (143 for SIGTERM), also when stopped
while the phone is still starting. A session ended elsewhere, or by its deadline, exits 1.
Progress goes to stderr.

  --profile          Use the account's own profile phone (kept between sessions)
  --app PATH         Install this APK before the phone is shown (repeatable; the splits of
                     one app go together; skipped when the phone has this exact build)
  --no-grant         Do not grant the apps' runtime permissions at install (default: -g)
  --timeout S        The session's lifetime in seconds (default 3600)
  --start-timeout S  How long to wait for a free phone and its boot (default 180)
  --record FILE      Record the screen from ready until Ctrl-C into FILE (an H.264 MP4)
  --json             Print one JSON line {"session","serial","viewer_url",...} when ready

The viewer URL is a secret for you alone: it controls the phone.
${CONNECTION}`,
  sessions: `Usage: phonelease sessions [--json]

Lists the account's live sessions (provisioning, ready, error, closing). --json prints them
without their secrets (watch_url and the ADB unlock code are left out).
${CONNECTION}`,
  end: `Usage: phonelease end SID [--json]

Ends a session and waits until the service confirms its cleanup.
${CONNECTION}`,
  history: `Usage: phonelease history [--limit N | --all] [--json]

Finished sessions, newest first: the last 100 by default, N with --limit, every one with --all.
${CONNECTION}`,
  me: `Usage: phonelease me [--json]

The account: credit, price, session limit and slots, the profile phone.
${CONNECTION}`,
  keys: `Usage: phonelease keys create LABEL [--json]
       phonelease keys list [--json]
       phonelease keys revoke HASH [--json]

create prints the new key once (store it now: it is never shown again); list shows key
hashes and hints, never keys; revoke takes a key_hash from list.
${CONNECTION}`,
};
