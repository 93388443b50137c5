/**
 * `locksettings` (also `cmd lock_settings`), Android's LockSettingsShellCommand over the
 * phone's lock (../../lock-settings.ts).
 */
import type { CommandFn } from '../command.js';
import { credentialMatches, storeCredential, type CredentialType } from '../../lock-settings.js';

/** Android's shortest PIN, password and pattern (LockPatternUtils' minimums). */
const MIN_LENGTH = 4;

const HELP = `lockSettings service commands:

NOTE: when lock screen is set, all commands require the --old <CREDENTIAL> argument.

  help
    Prints this help text.

  get-disabled [--old <CREDENTIAL>] [--user USER_ID]
    Checks whether lock screen is disabled.

  set-disabled [--old <CREDENTIAL>] [--user USER_ID] <true|false>
    When true, disables lock screen.

  set-pattern [--old <CREDENTIAL>] [--user USER_ID] <PATTERN>
    Sets the lock screen as pattern, using the given PATTERN to unlock.

  set-pin [--old <CREDENTIAL>] [--user USER_ID] <PIN>
    Sets the lock screen as PIN, using the given PIN to unlock.

  set-password [--old <CREDENTIAL>] [--user USER_ID] <PASSWORD>
    Sets the lock screen as password, using the given PASSWORD to unlock.

  clear [--old <CREDENTIAL>] [--user USER_ID]
    Clears the lock credentials.

  verify [--old <CREDENTIAL>] [--user USER_ID]
    Verifies the lock credentials.

`;

/**
 * `locksettings` (also `cmd lock_settings`): every command but help needs the current
 * credential as `--old` once there is one; a wrong one prints `Old password '...' didn't
 * match` and fails (status 255), as Android's does.
 */
export const locksettings: CommandFn = (ctx) => {
  const lock = ctx.device.system.lock;
  const [verb, ...rest] = ctx.args;
  if (verb === undefined || verb === 'help' || verb === '-h') {
    ctx.stdout.write(HELP);
    return 0;
  }
  let old = '';
  const operands: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--old' || a === '--user') {
      const value = rest[++i];
      if (value === undefined) {
        ctx.stderr.write(
          `Error while executing command: ${verb}\njava.lang.IllegalArgumentException: Argument expected after "${a}"\n`,
        );
        return 255;
      }
      if (a === '--old') old = value;
      else if (value !== '0') {
        ctx.stderr.write(`locksettings: the virtual phone has one user (0), not ${value}\n`);
        return 255;
      }
    } else if (a.startsWith('--') && operands.length === 0) {
      ctx.stderr.write(
        `Unknown option: ${a}\nError while executing command: ${verb}\njava.lang.IllegalArgumentException\n`,
      );
      return 255;
    } else operands.push(a);
  }
  // A query of whether the lock screen is disabled needs no credential (appium-adb and
  // other tools ask it without one to learn whether the phone is locked at all).
  if (verb === 'get-disabled') {
    ctx.stdout.write(`${!lock.credential && lock.disabled}\n`);
    return 0;
  }
  // The current credential first, for every other command.
  if (lock.credential) {
    if (!credentialMatches(lock, old)) {
      ctx.stdout.write(`Old password '${old}' didn't match\n`);
      return 255;
    }
  } else if (old !== '') {
    ctx.stdout.write('Old password provided but user has no password\n');
    return 255;
  }
  const newValue = operands[0];
  switch (verb) {
    case 'verify':
      ctx.stdout.write('Lock credential verified successfully\n');
      return 0;
    case 'set-disabled': {
      const disabled = newValue?.toLowerCase() === 'true';
      lock.disabled = disabled;
      ctx.device.lockChanged();
      ctx.stdout.write(`Lock screen disabled set to ${disabled}\n`);
      return 0;
    }
    case 'clear':
      lock.credential = null;
      ctx.device.lockChanged();
      ctx.stdout.write('Lock credential cleared\n');
      return 0;
    case 'set-pin':
    case 'set-password':
    case 'set-pattern': {
      const type = verb.slice(4) as CredentialType;
      if (newValue === undefined) {
        ctx.stderr.write(`Error while executing command: ${verb}\njava.lang.NullPointerException\n`);
        return 255;
      }
      if (type === 'pin' && !/^\d+$/.test(newValue)) {
        ctx.stdout.write("New credential doesn't satisfy admin policies: CONTAINS_INVALID_CHARACTERS\n");
        return 255;
      }
      if (type === 'pattern' && !/^[1-9]+$/.test(newValue)) {
        ctx.stderr.write(
          `Error while executing command: ${verb}\njava.lang.IllegalArgumentException: Invalid pattern: ${newValue}\n`,
        );
        return 255;
      }
      if (newValue.length < MIN_LENGTH) {
        ctx.stdout.write(`New credential doesn't satisfy admin policies: TOO_SHORT(${MIN_LENGTH})\n`);
        return 255;
      }
      lock.credential = storeCredential(type, newValue);
      ctx.device.lockChanged();
      ctx.stdout.write(
        `${{ pin: 'Pin', password: 'Password', pattern: 'Pattern' }[type]} set to '${newValue}'\n`,
      );
      return 0;
    }
    default:
      // Android's prints this and still ends with status 0.
      ctx.stderr.write(`Unknown command: ${verb}\n`);
      return 0;
  }
};
