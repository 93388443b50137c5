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

export class EmulatorConsole {
  private buffered = '';
  private lines: string[] = [];
  private waiter: (() => void) | null = null;
  private closed = false;

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

  /**
   * Connects, reads the banner and authenticates with the token from `tokenPath` when the
   * banner asks for it. Rejects when the port does not answer or the token is refused.
   */
  static async connect(port: number, tokenPath: string, timeoutMs = 10_000): Promise<EmulatorConsole> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(timeoutMs, () =>
      socket.destroy(new Error(`emulator console on port ${port} timed out`)),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const console = new EmulatorConsole(socket);
    try {
      const banner = await console.readReply('(banner)');
      if (banner.some((l) => l.includes('Authentication required'))) {
        const token = await readConsoleToken(tokenPath);
        await console.command(`auth ${token}`);
      }
      return console;
    } catch (error) {
      console.close();
      throw error;
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
      if (this.closed) throw new Error(`emulator console closed before answering "${command}"`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  /** Sends one command and returns the lines before its OK. */
  async command(command: string): Promise<string[]> {
    this.socket.write(`${command}\n`);
    return this.readReply(command);
  }

  close(): void {
    if (!this.socket.destroyed) this.socket.end('quit\n');
    this.socket.destroy();
  }
}

/** Connects, runs one command, and hangs up (how `adb emu` and Appium use the console). */
export async function consoleCommand(port: number, tokenPath: string, command: string): Promise<string[]> {
  const c = await EmulatorConsole.connect(port, tokenPath);
  try {
    return await c.command(command);
  } finally {
    c.close();
  }
}
