/**
 * ADB shell services: `shell:` (v1: raw bytes, stdout and stderr merged, no exit code),
 * `shell,v2,...:` (framed stdin/stdout/stderr/exit packets), `pty` interactive sessions,
 * `exec:` (raw, no framing) and `abb:` / `abb_exec:` (binder commands without a shell).
 */
import { StringDecoder } from 'node:string_decoder';
import type { CommandTable, Io } from '../shell/command.js';
import { Interpreter, SHELL_NAME, initialShellState, mkshMayExec } from '../shell/interpreter.js';
import type { Input, Output, Terminal } from '../shell/io.js';
import { WritableOutput } from '../shell/io.js';
import { endsHeredoc, incompleteShell } from '../shell/parse.js';
import type { HeredocEnd } from '../shell/parse.js';
import type { Device } from '../device.js';
import { ROOT_CREDENTIALS, SHELL_CREDENTIALS } from '../fs.js';
import { ADBD } from '../processes.js';
import type { Process } from '../processes.js';
import { SIGHUP } from '../signals.js';
import type { AdbStream } from './stream.js';

const ID_STDIN = 0;
const ID_STDOUT = 1;
const ID_STDERR = 2;
const ID_EXIT = 3;
const ID_CLOSE_STDIN = 4;
const ID_WINDOW_SIZE = 5;

/** Unread stdin beyond this pauses the stream, so the host is throttled (no OKAY). */
const STDIN_HIGH_WATER = 1024 * 1024;
/** Once the command has read stdin down to this, the stream resumes. */
const STDIN_LOW_WATER = 256 * 1024;

/**
 * A queue of input chunks fed by the stream and read by the shell. Flow control: above the
 * high-water mark the stream is paused (its readable buffer then fills and the host gets no
 * OKAY); reading below the low-water mark resumes it.
 */
class StreamInput implements Input {
  terminal?: Terminal;
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private ended = false;
  private paused = false;
  private waiter: (() => void) | null = null;

  constructor(private readonly stream: AdbStream) {}

  push(chunk: Buffer): void {
    if (this.ended || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (!this.paused && this.buffered > STDIN_HIGH_WATER) {
      this.paused = true;
      this.stream.pause();
    }
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  unread(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.unshift(chunk);
    this.buffered += chunk.length;
  }

  read(): Promise<Buffer | null> {
    const next = this.chunks.shift();
    if (next) {
      this.buffered -= next.length;
      if (this.paused && this.buffered <= STDIN_LOW_WATER) {
        this.paused = false;
        this.stream.resume();
      }
      return Promise.resolve(next);
    }
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.waiter = () => {
        this.waiter = null;
        resolve(this.read());
      };
    });
  }

  private wake(): void {
    this.waiter?.();
  }
}

function frame(id: number, data: Buffer): Buffer[] {
  const header = Buffer.allocUnsafe(5);
  header[0] = id;
  header.writeUInt32LE(data.length, 1);
  return [header, data];
}

/** An Output that wraps each write in a shell-protocol packet. */
class PacketOutput implements Output {
  constructor(
    private readonly stream: AdbStream,
    private readonly id: number,
    private readonly translateNewlines: boolean,
    readonly terminal: Terminal | undefined,
    private readonly holders: Holders,
  ) {}
  hold(): () => void {
    return this.holders.hold();
  }
  get closed(): boolean {
    return this.stream.closedByPeer || this.stream.destroyed;
  }
  write(data: string | Buffer): void {
    if (this.closed) return;
    let buf = typeof data === 'string' ? Buffer.from(data) : data;
    if (buf.length === 0) return;
    if (this.translateNewlines) buf = crlf(buf);
    // Large writes are split so no packet exceeds what the host reads in one go.
    const max = 256 * 1024;
    for (let i = 0; i < buf.length; i += max) {
      for (const part of frame(this.id, buf.subarray(i, i + max))) this.stream.write(part);
    }
  }
  drain(): Promise<void> {
    return new WritableOutput(this.stream, undefined, () => this.closed).drain();
  }
}

/** A terminal turns "\n" into "\r\n". */
function crlf(buf: Buffer): Buffer {
  if (!buf.includes(0x0a)) return buf;
  return Buffer.from(buf.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
}

/** The largest shell-protocol packet accepted from the host (adb sends a few KiB at most). */
const MAX_PACKET = 1024 * 1024;

/**
 * Parses shell-protocol packets from the host (stdin, close-stdin, window size). Stdin data
 * is handed on as it arrives, so nothing but the 5-byte header is ever held; a packet that
 * claims more than MAX_PACKET bytes is a protocol error and closes the stream.
 */
function readPackets(stream: AdbStream, input: StreamInput, terminal: Terminal | undefined): void {
  const header = Buffer.alloc(5);
  let headerBytes = 0;
  let id = -1;
  let remaining = 0;
  let windowSize = '';
  stream.on('data', (chunk: Buffer) => {
    let offset = 0;
    while (offset < chunk.length) {
      if (headerBytes < 5) {
        const n = Math.min(5 - headerBytes, chunk.length - offset);
        chunk.copy(header, headerBytes, offset, offset + n);
        headerBytes += n;
        offset += n;
        if (headerBytes < 5) return;
        id = header[0]!;
        remaining = header.readUInt32LE(1);
        if (remaining > MAX_PACKET) {
          stream.destroy();
          return;
        }
      }
      const n = Math.min(remaining, chunk.length - offset);
      if (n > 0 && id === ID_STDIN) input.push(chunk.subarray(offset, offset + n));
      if (n > 0 && id === ID_WINDOW_SIZE) windowSize += chunk.toString('latin1', offset, offset + n);
      offset += n;
      remaining -= n;
      if (remaining === 0) {
        // A whole packet: close-stdin ends input; a window size ("ROWSxCOLS,XxY") sizes the pty.
        if (id === ID_CLOSE_STDIN) input.end();
        if (id === ID_WINDOW_SIZE) {
          const size = /^(\d+)x(\d+)/.exec(windowSize);
          if (size && terminal) {
            terminal.rows = Number(size[1]);
            terminal.cols = Number(size[2]);
          }
          windowSize = '';
        }
        headerBytes = 0;
      }
    }
  });
  stream.on('end', () => input.end());
  stream.on('close', () => input.end());
}

export interface ShellServiceOptions {
  device: Device;
  commands: CommandTable;
}

type Mode = { protocol: boolean; pty: boolean };

/** Parses `shell[,v2][,TERM=x][,raw|pty]:command`. */
export function parseShellDestination(
  destination: string,
): { mode: Mode; command: string; env: Record<string, string> } | null {
  const colon = destination.indexOf(':');
  if (colon < 0) return null;
  const head = destination.slice(0, colon);
  const command = destination.slice(colon + 1);
  const parts = head.split(',');
  if (parts[0] !== 'shell') return null;
  const env: Record<string, string> = {};
  let protocol = false;
  let type: 'raw' | 'pty' | null = null;
  for (const p of parts.slice(1)) {
    if (p === 'v2') protocol = true;
    else if (p === 'raw' || p === 'pty') type = p;
    else if (p.startsWith('TERM=')) env.TERM = p.slice(5);
  }
  // No type given: a command runs raw, an interactive session gets a pty (adbd's default).
  const pty = type ? type === 'pty' : command.length === 0;
  return { mode: { protocol, pty }, command, env };
}

/**
 * The processes that hold a session's output open, as file descriptors of the stream: the
 * shell and anything it started that writes there (a background job without redirection).
 * adbd ends the stream only once all of them have closed it.
 */
class Holders {
  private count = 0;
  private waiters: (() => void)[] = [];

  hold(): () => void {
    this.count++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.count > 0) return;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    };
  }

  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** An Output onto the stream (no shell protocol) that processes hold open. */
class HeldOutput extends WritableOutput {
  constructor(
    stream: AdbStream,
    transform: ((data: Buffer) => Buffer) | undefined,
    readonly terminal: Terminal | undefined,
    private readonly holders: Holders,
  ) {
    super(stream, transform, () => stream.closedByPeer || stream.destroyed);
  }
  hold(): () => void {
    return this.holders.hold();
  }
}

/**
 * adbd: "protocol FD died, sending SIGHUP". When the client goes away (the host closed the
 * stream) while the process still runs, the process is hung up.
 */
function hangUpWhenClientLeaves(stream: AdbStream, device: Device, proc: Process): void {
  stream.signal.addEventListener(
    'abort',
    () => {
      if (stream.closedByPeer && !proc.exited) device.processes.signal(proc.pid, SIGHUP, ROOT_CREDENTIALS);
    },
    { once: true },
  );
}

function finish(stream: AdbStream, protocol: boolean, status: number): void {
  if (stream.closedByPeer || stream.destroyed) return;
  if (protocol) for (const part of frame(ID_EXIT, Buffer.from([status & 0xff]))) stream.write(part);
  stream.end();
  // Input nobody will read any more (a paused stdin) is dropped, so the stream can close.
  stream.resume();
}

function ioFor(stream: AdbStream, mode: Mode, terminal: Terminal | undefined, holders: Holders): Io {
  const input = new StreamInput(stream);
  input.terminal = terminal;
  if (mode.protocol) {
    readPackets(stream, input, terminal);
    const stdout = new PacketOutput(stream, ID_STDOUT, mode.pty, terminal, holders);
    // A pty merges stderr into the terminal.
    const stderr = mode.pty ? stdout : new PacketOutput(stream, ID_STDERR, false, terminal, holders);
    return { stdin: input, stdout, stderr };
  }
  stream.on('data', (chunk: Buffer) => input.push(chunk));
  stream.on('end', () => input.end());
  stream.on('close', () => input.end());
  const out = new HeldOutput(stream, mode.pty ? crlf : undefined, terminal, holders);
  return { stdin: input, stdout: out, stderr: out };
}

/**
 * `shell:`, `shell,v2,...:` and `exec:`. Like adbd, each starts `/system/bin/sh -c CMD` (or
 * `sh -` for a session) in a new session under adbd; a command without the shell protocol
 * gets a pty in raw mode, a v2 command pipes. When the stream dies while the shell runs (the
 * client exited or was interrupted), the shell gets SIGHUP ("protocol FD died, sending
 * SIGHUP"). The stream ends once the shell has exited and nothing it started still holds
 * its output, with the shell's status (128+N if a signal killed it).
 */
export function runShellService(stream: AdbStream, options: ShellServiceOptions, destination: string): void {
  const parsed = destination.startsWith('exec:')
    ? { mode: { protocol: false, pty: false }, command: destination.slice(5), env: {} }
    : parseShellDestination(destination);
  if (!parsed) {
    stream.end();
    return;
  }
  const { device } = options;
  const { mode, command, env } = parsed;
  // Without the shell protocol adbd always allocates a pty (in raw mode for a command).
  const pts = mode.pty || !mode.protocol ? device.processes.openPty() : null;
  const terminal: Terminal | undefined =
    pts === null ? undefined : { name: `pts/${pts}`, rows: 0, cols: 0, echo: mode.pty };
  const holders = new Holders();
  const io = ioFor(stream, mode, terminal, holders);
  const proc = device.processes.spawn({
    parent: ADBD,
    argv: command.length > 0 ? [SHELL_NAME, '-c', command] : [SHELL_NAME, '-'],
    uid: SHELL_CREDENTIALS.uid,
    user: 'shell',
    newSession: true,
    tty: terminal?.name ?? null,
  });
  proc.setHolds([holders.hold()]);
  const shell = new Interpreter(device, options.commands, initialShellState(device, env), proc, {
    interactive: command.length === 0 && mode.pty,
  });
  hangUpWhenClientLeaves(stream, device, proc);
  const lifetime = device.lifetimeSignal;
  const run =
    command.length > 0
      ? shell.script(command, io, lifetime, { exec: mkshMayExec(command) })
      : interactive(shell, io, mode.pty, lifetime).then((status) => shell.finish(io, lifetime, status));
  const done = (status: number) => {
    proc.exit();
    void holders.idle().then(() => {
      if (pts !== null) device.processes.closePty(pts);
      finish(stream, mode.protocol, status);
    });
  };
  run.then(done, (error: unknown) => {
    device.log.debug('virtual shell: session failed', { destination, error: String(error) });
    io.stderr.write(`${SHELL_NAME}: ${String(error)}\n`);
    done(1);
  });
}

/**
 * An interactive session: reads lines from stdin and runs each command once it is whole
 * (with a prompt on a pty, and mksh's `> ` while a quote, a here-document, an `if` or a
 * loop goes on over more lines), so a script piped into `adb shell` runs as it would on a phone.
 */
async function interactive(shell: Interpreter, io: Io, pty: boolean, signal: AbortSignal): Promise<number> {
  let pending = '';
  /** Inside a here-document's body, the line that ends it: no other line needs a parse. */
  let heredoc: HeredocEnd | null = null;
  const prompt = () => {
    if (pty) io.stdout.write(pending === '' ? `shiba:/ $ ` : '> ');
  };
  const echo = (text: string) => {
    if (pty && io.stdin.terminal?.echo !== false) io.stdout.write(text);
  };
  // stdin belongs to the terminal, not to the commands.
  const commandIo: Io = { ...io, stdin: { read: () => Promise.resolve(null), terminal: io.stdin.terminal } };
  const hungUp = shell.proc.whenTerminated().then(() => null);
  prompt();
  let line = '';
  // A character may be split between chunks: decode across them.
  const decoder = new StringDecoder('utf8');
  for (;;) {
    const chunk = await Promise.race([io.stdin.read(), hungUp]);
    if (chunk === null || shell.proc.terminated.aborted) break;
    for (const ch of decoder.write(chunk)) {
      if (pty && ch === '\x03') {
        line = '';
        pending = '';
        heredoc = null;
        io.stdout.write('^C\n');
        prompt();
        continue;
      }
      if (pty && ch === '\x04' && line === '') return shell.status;
      if (pty && (ch === '\x7f' || ch === '\b')) {
        if (line.length > 0) {
          line = line.slice(0, -1);
          echo('\b \b');
        }
        continue;
      }
      if (ch === '\r' || ch === '\n') {
        echo('\n');
        const source = pending === '' ? line : `${pending}\n${line}`;
        if (heredoc && !endsHeredoc(line, heredoc)) {
          // A body line: the source stays as incomplete as it was (a long here-document
          // piped in is not parsed again for each of its lines).
          pending = source;
          line = '';
          prompt();
          continue;
        }
        line = '';
        // A command that goes on over the next lines waits for them.
        const waiting = source.trim().length > 0 ? incompleteShell(source) : false;
        pending = waiting ? source : '';
        heredoc = waiting ? waiting.heredoc : null;
        if (pending === '' && source.trim().length > 0) {
          await shell.run(source, commandIo, signal);
          if (shell.exited || shell.proc.terminated.aborted || signal.aborted) return shell.status;
        }
        prompt();
        continue;
      }
      line += ch;
      echo(ch);
    }
  }
  line += decoder.end();
  // What is left at the end runs as it is (an unfinished command says so).
  const rest = pending === '' ? line : `${pending}\n${line}`;
  if (rest.trim().length > 0 && !shell.proc.terminated.aborted) await shell.run(rest, commandIo, signal);
  return shell.status;
}

/**
 * `abb:` (shell protocol) and `abb_exec:` (raw): `SERVICE\0arg\0arg...`. adbd runs it in
 * its abb process like `cmd` does (empty arguments are dropped, as abb's parser does), and
 * reports the command's own status and messages.
 */
export function runBinderService(stream: AdbStream, options: ShellServiceOptions, destination: string): void {
  const { device } = options;
  const raw = destination.startsWith('abb_exec:');
  const argv = destination
    .slice(raw ? 'abb_exec:'.length : 'abb:'.length)
    .split('\0')
    .filter((a) => a.length > 0);
  const mode: Mode = { protocol: !raw, pty: false };
  const holders = new Holders();
  const io = ioFor(stream, mode, undefined, holders);
  const proc = device.processes.spawn({
    parent: ADBD,
    argv: ['abb'],
    uid: SHELL_CREDENTIALS.uid,
    user: 'shell',
    newSession: true,
    tty: null,
  });
  const shell = new Interpreter(device, options.commands, initialShellState(device), proc);
  hangUpWhenClientLeaves(stream, device, proc);
  shell.execute(['cmd', ...argv], io, device.lifetimeSignal).then(
    (status) => {
      proc.exit();
      finish(stream, mode.protocol, status);
    },
    (error: unknown) => {
      proc.exit();
      device.log.debug('virtual abb: command failed', { argv, error: String(error) });
      io.stderr.write(`${String(error)}\n`);
      finish(stream, mode.protocol, 1);
    },
  );
}
