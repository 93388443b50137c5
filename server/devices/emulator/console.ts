/**
 * The emulator console (reference, "Console"): a line protocol on the console port. Replies
 * end lines with \r\n; success ends with `OK` (or `OK: ...` for kill); an error is one line
 * `KO: ...`. When the token file is non-empty the banner asks for `auth <token>`, and until
 * then only help, ping, avd name, auth and quit work.
 */
import net from 'node:net';
import { readFile } from 'node:fs/promises';

/** A `KO:` reply, with the console's own words. */
export class ConsoleError extends Error {
  constructor(
    readonly command: string,
    readonly reply: string,
  ) {
    super(`emulator console refused "${command.split(' ')[0] === 'auth' ? 'auth' : command}": ${reply}`);
    this.name = 'ConsoleError';
  }
}

/** The token the console expects, '' when the file is empty or absent (no auth then). */
export async function readConsoleToken(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return '';
  }
}

/** Limit for connecting, reading the banner and authenticating. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Limit for a console command that answers at once (ping, kill, avd name, ...). */
export const COMMAND_TIMEOUT_MS = 30_000;
/**
 * Limit for `avd snapshot save|load`: a save writes the guest's whole RAM (GBs) and says
 * nothing until its final OK, so it gets minutes, not the seconds a plain command gets.
 */
export const SNAPSHOT_TIMEOUT_MS = 10 * 60_000;

/** How long `command` may take before the console counts as gone. */
export function commandTimeoutMs(command: string): number {
  return /^avd\s+snapshot\s+(save|load)\b/.test(command) ? SNAPSHOT_TIMEOUT_MS : COMMAND_TIMEOUT_MS;
}

export interface CommandOptions {
  /** Default commandTimeoutMs(command). */
  timeoutMs?: number;
  /** Hangs up when aborted (the command's result is then unknown). */
  signal?: AbortSignal;
}

export class EmulatorConsole {
  private buffered = '';
  private lines: string[] = [];
  private waiter: (() => void) | null = null;
  private closed = false;
  /** Why the socket was destroyed by us (a limit or an abort), for the waiting reader. */
  private failure: Error | null = null;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      let nl: number;
      while ((nl = this.buffered.indexOf('\n')) >= 0) {
        this.lines.push(this.buffered.slice(0, nl).replace(/\r$/, ''));
        this.buffered = this.buffered.slice(nl + 1);
      }
      this.wake();
    });
    const end = () => {
      this.closed = true;
      this.wake();
    };
    socket.on('close', end);
    socket.on('error', end);
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.socket.destroy();
    this.closed = true;
    this.wake();
  }

  /**
   * Connects, reads the banner and authenticates with the token from `tokenPath` when the
   * banner asks for it, all within `timeoutMs`. Rejects when the port does not answer or the
   * token is refused. The limit covers only this step: each command has its own.
   */
  static async connect(
    port: number,
    tokenPath: string,
    timeoutMs = CONNECT_TIMEOUT_MS,
  ): Promise<EmulatorConsole> {
    const socket = net.connect(port, '127.0.0.1');
    const timer = setTimeout(
      () =>
        socket.destroy(new Error(`emulator console on port ${port} did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      const console = new EmulatorConsole(socket);
      socket.once('error', (error) => (console.failure ??= error));
      try {
        const banner = await console.readReply('(banner)');
        if (banner.some((l) => l.includes('Authentication required'))) {
          const token = await readConsoleToken(tokenPath);
          await console.write(`auth ${token}`);
        }
        return console;
      } catch (error) {
        console.close();
        throw error;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads lines up to the final OK; a KO line rejects with it. */
  private async readReply(command: string): Promise<string[]> {
    const out: string[] = [];
    for (;;) {
      while (this.lines.length > 0) {
        const line = this.lines.shift()!;
        if (line === 'OK' || line.startsWith('OK:')) return out;
        if (line.startsWith('KO')) throw new ConsoleError(command, line);
        out.push(line);
      }
      if (this.closed) {
        if (this.failure) throw this.failure;
        throw new Error(`emulator console closed before answering "${printable(command)}"`);
      }
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private write(command: string): Promise<string[]> {
    this.socket.write(`${command}\n`);
    return this.readReply(command);
  }

  /**
   * Sends one command and returns the lines before its OK. Past its limit (or on abort) the
   * console hangs up and the command rejects.
   */
  async command(command: string, options: CommandOptions = {}): Promise<string[]> {
    const timeoutMs = options.timeoutMs ?? commandTimeoutMs(command);
    const timer = setTimeout(
      () =>
        this.fail(
          new Error(`emulator console did not answer "${printable(command)}" within ${timeoutMs} ms`),
        ),
      timeoutMs,
    );
    const onAbort = () =>
      this.fail(new Error(`emulator console command "${printable(command)}" was abandoned`));
    options.signal?.throwIfAborted();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.write(command);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    if (!this.socket.destroyed) this.socket.end('quit\n');
    this.socket.destroy();
  }
}

/** A command as it may appear in an error: never the auth token. */
function printable(command: string): string {
  return command.split(' ')[0] === 'auth' ? 'auth' : command;
}

/** Connects, runs one command, and hangs up (how `adb emu` and Appium use the console). */
export async function consoleCommand(
  port: number,
  tokenPath: string,
  command: string,
  options: CommandOptions = {},
): Promise<string[]> {
  const c = await EmulatorConsole.connect(port, tokenPath);
  try {
    return await c.command(command, options);
  } finally {
    c.close();
  }
}
