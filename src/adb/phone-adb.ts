/**
 * The in-process ADB client of a lease: @yume-chan/adb over one socket to the ADB gateway
 * (past the unlock line). One connection per lease carries every shell, push, pull and
 * install as its own ADB stream; nothing needs the stock adb binary or an adb server.
 */
import { randomBytes } from 'node:crypto';
import { Adb, AdbDaemonTransport, type AdbSocket } from '@yume-chan/adb';
import { ReadableStream } from '@yume-chan/stream-extra';
import { AdbError } from '../errors.js';
import { LazyAdbCredentialStore } from './credentials.js';
import { openGateway, type AdbEndpoint } from './gateway.js';
import { socketToAdbConnection } from './packet-stream.js';
import { PortForwards } from './port-forwards.js';
import { messageOf } from '../util/message.js';

export interface ShellResult {
  stdout: string;
  stderr: string;
  /** The command's exit status (shell protocol v2). */
  exitCode: number;
}

export interface ShellBytesResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface RunningCommand {
  /** Its standard output (stdout and stderr mixed without shell protocol v2). */
  output: ReadableStream<Uint8Array>;
  exited: Promise<number>;
  kill(): Promise<void>;
}

/** Chunks handed to the sync protocol when pushing (it splits them into 64 KiB DATA packets). */
const PUSH_CHUNK = 1024 * 1024;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export class PhoneAdb {
  readonly #adb: Adb;
  #ports: PortForwards | null = null;

  private constructor(adb: Adb) {
    this.#adb = adb;
  }

  /** Opens the gateway, presents the unlock code and completes the ADB handshake. */
  static async connect(
    endpoint: AdbEndpoint,
    options: { serial: string; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<PhoneAdb> {
    const socket = await openGateway(endpoint, options);
    const timeoutMs = options.timeoutMs ?? 15_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      // The library waits for the phone's CNXN indefinitely; a phone that never answers
      // must not hold a lease (or its end) forever.
      const transport = await Promise.race([
        AdbDaemonTransport.authenticate({
          serial: options.serial,
          connection: socketToAdbConnection(socket),
          credentialStore: new LazyAdbCredentialStore(),
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no ADB handshake within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      // A connection that dies (the session ended, the network dropped) rejects this
      // promise; every operation in flight fails on its own, so nothing else should.
      // Unobserved, it would surface as an unhandled rejection in whatever runs next —
      // under Playwright, a failure of an unrelated test.
      transport.disconnected.catch(() => undefined);
      return new PhoneAdb(new Adb(transport));
    } catch (error) {
      socket.destroy();
      throw new AdbError('adb_failed', `The ADB handshake with the phone failed: ${messageOf(error)}.`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Features the phone's adbd announced (shell_v2, stat_v2, ...). */
  get deviceFeatures(): readonly string[] {
    return this.#adb.deviceFeatures;
  }

  /** Runs `command` in the phone's shell; resolves with its output and exit code (non-zero is not an error). */
  async shell(command: string): Promise<ShellResult> {
    const r = await this.shellBytes(command);
    return { stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8'), exitCode: r.exitCode };
  }

  async shellBytes(command: string): Promise<ShellBytesResult> {
    try {
      const v2 = this.#adb.subprocess.shellProtocol;
      if (v2?.isSupported) {
        // An array of one: the command goes to the phone's shell exactly as written.
        const r = await v2.spawnWait([command]);
        return { stdout: Buffer.from(r.stdout), stderr: Buffer.from(r.stderr), exitCode: r.exitCode };
      }
      // Without shell v2 there is no exit status on the wire: print it after a marker.
      const marker = `__phonelease_exit_${randomBytes(6).toString('hex')}__`;
      const out = Buffer.from(
        await this.#adb.subprocess.noneProtocol.spawnWait([`${command}; echo "${marker}$?"`]),
      );
      const at = out.lastIndexOf(marker);
      if (at < 0) return { stdout: out, stderr: Buffer.alloc(0), exitCode: -1 };
      return {
        stdout: out.subarray(0, at),
        stderr: Buffer.alloc(0),
        exitCode: Number(
          out
            .subarray(at + marker.length)
            .toString()
            .trim(),
        ),
      };
    } catch (error) {
      throw new AdbError('adb_failed', `shell "${command.slice(0, 80)}" failed: ${messageOf(error)}.`, {
        cause: error,
      });
    }
  }

  /** Writes `data` to `remote` on the phone (sync protocol), creating directories as needed. */
  async push(data: Uint8Array, remote: string, options: { mode?: number } = {}): Promise<void> {
    let offset = 0;
    const file = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= data.length) {
          controller.close();
          return;
        }
        const end = Math.min(data.length, offset + PUSH_CHUNK);
        controller.enqueue(data.subarray(offset, end));
        offset = end;
      },
    });
    const sync = await this.#sync();
    try {
      await sync.write({
        filename: remote,
        file,
        permission: options.mode ?? 0o644,
        mtime: Math.floor(Date.now() / 1000),
      });
    } catch (error) {
      throw new AdbError('adb_failed', `push to ${remote} failed: ${messageOf(error)}.`, { cause: error });
    } finally {
      await sync.dispose();
    }
  }

  /** Reads `remote` from the phone (sync protocol). */
  async pull(remote: string): Promise<Buffer> {
    const sync = await this.#sync();
    try {
      const chunks: Uint8Array[] = [];
      const reader = sync.read(remote).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
      return Buffer.concat(chunks);
    } catch (error) {
      throw new AdbError('adb_failed', `pull of ${remote} failed: ${messageOf(error)}.`, { cause: error });
    } finally {
      await sync.dispose();
    }
  }

  /**
   * Installs an APK: pushed to /data/local/tmp, installed with `pm install -r -t`, then
   * removed. The oldest path there is: every Android version and every adbd supports it.
   */
  async install(apk: Uint8Array): Promise<void> {
    const remote = `/data/local/tmp/phonelease-${randomBytes(6).toString('hex')}.apk`;
    await this.push(apk, remote);
    try {
      const r = await this.shell(`pm install -r -t '${remote}'`);
      const output = `${r.stdout}${r.stderr}`.trim();
      if (r.exitCode !== 0 || !/\bSuccess\b/.test(output)) {
        throw new AdbError(
          'adb_failed',
          `Installing the APK failed: ${output || `exit code ${r.exitCode}`}.`,
        );
      }
    } finally {
      await this.shell(`rm -f '${remote}'`).catch(() => undefined);
    }
  }

  /** The screen as PNG, from the phone's own screencap. */
  async screencap(): Promise<Buffer> {
    const r = await this.shellBytes('screencap -p');
    if (r.exitCode !== 0 || !r.stdout.subarray(0, 8).equals(PNG_SIGNATURE)) {
      throw new AdbError(
        'adb_failed',
        `screencap did not return a PNG (exit code ${r.exitCode}${r.stderr.length ? `: ${r.stderr.toString().trim()}` : ''}).`,
      );
    }
    return r.stdout;
  }

  /**
   * Opens a raw stream to a device service, e.g. `tcp:6790` (what `adb forward` does for
   * each connection, without a local port or the adb server).
   */
  async openSocket(service: string): Promise<AdbSocket> {
    try {
      return await this.#adb.createSocket(service);
    } catch (error) {
      throw new AdbError('adb_failed', `The phone refused the stream ${service}: ${messageOf(error)}.`, {
        cause: error,
      });
    }
  }

  /**
   * Starts a long-running shell command (e.g. `am instrument -w ...`, which lives as long as
   * its stream stays open). kill() closes the stream; exited resolves with its exit code.
   */
  async spawn(command: string): Promise<RunningCommand> {
    const v2 = this.#adb.subprocess.shellProtocol;
    try {
      if (v2?.isSupported) {
        const p = await v2.spawn([command]);
        return { output: p.stdout, exited: p.exited, kill: async () => void (await p.kill()) };
      }
      const p = await this.#adb.subprocess.noneProtocol.spawn([command]);
      return { output: p.output, exited: p.exited.then(() => 0), kill: async () => void (await p.kill()) };
    } catch (error) {
      throw new AdbError('adb_failed', `shell "${command.slice(0, 80)}" failed: ${messageOf(error)}.`, {
        cause: error,
      });
    }
  }

  /** `adb forward` / `adb reverse` on this connection; they end when it closes. */
  get ports(): PortForwards {
    this.#ports ??= new PortForwards(this.#adb);
    return this.#ports;
  }

  async close(): Promise<void> {
    await this.#ports?.close();
    await this.#adb.close().catch(() => undefined);
  }

  async #sync() {
    try {
      return await this.#adb.sync();
    } catch (error) {
      throw new AdbError('adb_failed', `The phone refused the file sync service: ${messageOf(error)}.`, {
        cause: error,
      });
    }
  }
}
