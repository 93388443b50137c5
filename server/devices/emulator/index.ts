/**
 * Android SDK emulators as phones. Each session runs its own emulator process on a free
 * console/adb port pair; temporary phones run the AVD read-only (so many can share one
 * AVD) and keep nothing. Profile phones keep their third-party apps and shared storage
 * (/sdcard) between sessions: saved into the profile directory when the session ends and
 * put back after the next boot.
 *
 * When the machine has no SDK emulator or no AVD, boots fail with a public startup failure
 * that says what to install; the server itself keeps running.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  PhoneBootError,
  type AppSummary,
  type BootRequest,
  type DeviceBackend,
  type DeviceLogger,
  type DevicePhone,
  type PhoneInput,
} from '../types.js';

const run = promisify(execFile);

export interface EmulatorBackendOptions {
  log: DeviceLogger;
  /** SDK root; default ANDROID_HOME or ANDROID_SDK_ROOT. */
  sdkRoot?: string;
  /** AVD to run; default PHONELEASE_AVD, else the first AVD the emulator lists. */
  avd?: string;
  /** Boot budget before the start counts as failed (default 300 s: unaccelerated boots take minutes). */
  bootTimeoutMs?: number;
}

interface Tools {
  emulator: string;
  adb: string;
  avd: string;
}

const FIRST_CONSOLE_PORT = 5554;
const LAST_CONSOLE_PORT = 5680;

export function createEmulatorBackend(options: EmulatorBackendOptions): DeviceBackend {
  const log = options.log;
  const sdk = options.sdkRoot ?? process.env.ANDROID_HOME ?? process.env.ANDROID_SDK_ROOT ?? '';
  const phones = new Set<EmulatorPhone>();
  const usedPorts = new Set<number>();
  let tools: Promise<Tools> | null = null;

  const findTools = async (): Promise<Tools> => {
    const emulator = join(sdk, 'emulator', 'emulator');
    if (!sdk || !existsSync(emulator)) {
      throw new PhoneBootError(
        'emulator_unavailable',
        `This server has no Android SDK emulator${sdk ? ` (looked for ${emulator})` : ' (ANDROID_HOME is not set)'}. Install the SDK's emulator and a system image, or run the server with --device virtual.`,
      );
    }
    const sdkAdb = join(sdk, 'platform-tools', 'adb');
    const adb = existsSync(sdkAdb) ? sdkAdb : 'adb';
    let avd = options.avd ?? process.env.PHONELEASE_AVD;
    if (!avd) {
      const { stdout } = await run(emulator, ['-list-avds']);
      avd = stdout
        .split('\n')
        .map((l) => l.trim())
        .find((l) => l && !l.startsWith('INFO'));
    }
    if (!avd) {
      throw new PhoneBootError(
        'no_avd',
        'The Android SDK emulator has no AVD to run. Create one with avdmanager (for example an Android 14 x86_64 image), or set PHONELEASE_AVD.',
      );
    }
    return { emulator, adb, avd };
  };

  return {
    name: 'emulator',
    typicalBootMs: 30_000,
    startupSource: 'cold',
    async boot(request: BootRequest): Promise<DevicePhone> {
      tools ??= findTools();
      let t: Tools;
      try {
        t = await tools;
      } catch (err) {
        tools = null; // the SDK may be installed later; look again next time
        throw err;
      }
      const port = await freeConsolePort(usedPorts);
      usedPorts.add(port);
      try {
        const phone = await EmulatorPhone.start(t, port, request, options.bootTimeoutMs ?? 300_000);
        phones.add(phone);
        phone.onLost(() => phones.delete(phone));
        void phone.whenStopped.finally(() => {
          phones.delete(phone);
          usedPorts.delete(port);
        });
        return phone;
      } catch (err) {
        usedPorts.delete(port);
        log.warn('emulator failed to boot', { session: request.sessionId, error: String(err) });
        throw err;
      }
    },
    async close() {
      await Promise.all([...phones].map((p) => p.shutdown({ saveTo: null })));
    },
  };
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function freeConsolePort(used: Set<number>): Promise<number> {
  for (let p = FIRST_CONSOLE_PORT; p <= LAST_CONSOLE_PORT; p += 2) {
    if (used.has(p)) continue;
    if ((await portFree(p)) && (await portFree(p + 1))) return p;
  }
  throw new PhoneBootError(
    'no_port',
    'Every emulator port pair (5554-5681) is in use; end other emulators and retry.',
  );
}

const KEYCODES: Record<Extract<PhoneInput, { type: 'key' }>['key'], number> = {
  home: 3,
  back: 4,
  enter: 66,
  del: 67,
};

class EmulatorPhone implements DevicePhone {
  readonly label: string;
  readonly adb: { host: string; port: number };
  private readonly lost = new Set<(reason: string) => void>();
  private readonly changes = new Set<() => void>();
  private stopping = false;
  readonly whenStopped: Promise<void>;

  private constructor(
    private readonly tools: Tools,
    private readonly port: number,
    private readonly proc: ChildProcess,
    readonly screen: { w: number; h: number },
    model: string,
    release: string,
  ) {
    this.label = `Android emulator (${model}, Android ${release})`;
    this.adb = { host: '127.0.0.1', port: port + 1 };
    this.whenStopped = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.once('exit', (code, signal) => {
      if (!this.stopping) for (const l of this.lost) l(`emulator exited (${signal ?? code})`);
    });
  }

  private get serial(): string {
    return `emulator-${this.port}`;
  }

  static async start(
    tools: Tools,
    port: number,
    req: BootRequest,
    timeoutMs: number,
  ): Promise<EmulatorPhone> {
    const args = [
      '-avd',
      tools.avd,
      '-port',
      String(port),
      '-no-window',
      '-no-audio',
      '-no-boot-anim',
      '-gpu',
      'swiftshader_indirect',
    ];
    // Many temporary phones share one AVD read-only; nothing they do is written back.
    args.push('-read-only', '-no-snapshot-save');
    const proc = spawn(tools.emulator, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (b: Buffer) => {
      output = (output + b.toString()).slice(-4000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const kill = () => proc.kill('SIGKILL');
    req.signal.addEventListener('abort', kill, { once: true });
    const adb = (...a: string[]) => run(tools.adb, ['-s', `emulator-${port}`, ...a], { timeout: 30_000 });
    const deadline = Date.now() + timeoutMs;
    try {
      const exited = new Promise<never>((_, reject) =>
        proc.once('exit', (code) =>
          reject(
            new PhoneBootError(
              'emulator_exited',
              `The emulator stopped while booting (exit ${code}): ${output.split('\n').slice(-3).join(' ')}`,
            ),
          ),
        ),
      );
      const booted = (async () => {
        for (;;) {
          if (req.signal.aborted) throw new Error('boot aborted');
          if (Date.now() > deadline)
            throw new PhoneBootError(
              'boot_timeout',
              `The emulator did not finish booting within ${Math.round(timeoutMs / 1000)} s.`,
            );
          try {
            const { stdout } = await adb('shell', 'getprop sys.boot_completed; getprop init.svc.bootanim');
            const [done, anim] = stdout.split('\n').map((s) => s.trim());
            if (done === '1' && anim !== 'running') return;
          } catch {
            // not connected yet
          }
          await new Promise((r) => setTimeout(r, 1000));
        }
      })();
      await Promise.race([booted, exited]);
      const props = await adb('shell', 'getprop ro.product.model; getprop ro.build.version.release; wm size');
      const [model = 'emulator', release = '?', size = ''] = props.stdout.split('\n').map((s) => s.trim());
      const m = /(\d+)x(\d+)/.exec(size);
      const phone = new EmulatorPhone(
        tools,
        port,
        proc,
        { w: Number(m?.[1] ?? 1080), h: Number(m?.[2] ?? 2400) },
        model,
        release,
      );
      if (req.restoreFrom) await phone.restore(req.restoreFrom);
      return phone;
    } catch (err) {
      kill();
      throw err;
    } finally {
      req.signal.removeEventListener('abort', kill);
    }
  }

  private async adbRun(args: string[], encoding: 'buffer' | 'utf8' = 'utf8'): Promise<string | Buffer> {
    const { stdout } = await run(this.tools.adb, ['-s', this.serial, ...args], {
      encoding: encoding === 'buffer' ? 'buffer' : 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 60_000,
    });
    return stdout;
  }

  async capture(): Promise<Buffer> {
    return (await this.adbRun(['exec-out', 'screencap', '-p'], 'buffer')) as Buffer;
  }

  async apps(): Promise<AppSummary[]> {
    const out = (await this.adbRun([
      'shell',
      'cmd package query-activities -a android.intent.action.MAIN -c android.intent.category.LAUNCHER --brief',
    ])) as string;
    const packages = [
      ...new Set(
        out
          .split('\n')
          .map((l) => l.trim().split('/')[0]!)
          .filter((p) => /^[\w.]+$/.test(p)),
      ),
    ];
    return packages.map((p) => ({ package: p, label: p.split('.').pop() ?? p }));
  }

  async input(event: PhoneInput): Promise<void> {
    const args =
      event.type === 'tap'
        ? ['tap', String(event.x), String(event.y)]
        : event.type === 'swipe'
          ? [
              'swipe',
              String(event.x1),
              String(event.y1),
              String(event.x2),
              String(event.y2),
              String(event.durationMs ?? 300),
            ]
          : event.type === 'text'
            ? ['text', event.text.replace(/ /g, '%s').replace(/(["'`\\$&|;<>()*?!])/g, '\\$1')]
            : ['keyevent', String(KEYCODES[event.key])];
    await this.adbRun(['shell', 'input', ...args]);
    for (const l of this.changes) l();
  }

  onScreenChange(listener: () => void): () => void {
    this.changes.add(listener);
    return () => this.changes.delete(listener);
  }

  onLost(listener: (reason: string) => void): void {
    this.lost.add(listener);
  }

  /** Profile phones keep third-party apps and /sdcard; see the module comment. */
  private async save(dir: string): Promise<void> {
    const list = (await this.adbRun(['shell', 'pm list packages -3'])) as string;
    const packages = list
      .split('\n')
      .map((l) => l.replace(/^package:/, '').trim())
      .filter(Boolean);
    mkdirSync(join(dir, 'apks'), { recursive: true });
    for (const pkg of packages) {
      const paths = ((await this.adbRun(['shell', `pm path ${pkg}`])) as string)
        .split('\n')
        .map((l) => l.replace(/^package:/, '').trim())
        .filter(Boolean);
      const base = paths.find((p) => p.endsWith('base.apk')) ?? paths[0];
      if (base) await this.adbRun(['pull', base, join(dir, 'apks', `${pkg}.apk`)]);
    }
    await this.adbRun(['pull', '/sdcard/.', join(dir, 'sdcard')]);
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ packages, saved: Date.now() }));
  }

  private async restore(dir: string): Promise<void> {
    if (!existsSync(join(dir, 'manifest.json'))) return;
    JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    const apks = existsSync(join(dir, 'apks')) ? readdirSync(join(dir, 'apks')) : [];
    for (const apk of apks) await this.adbRun(['install', '-r', '-g', join(dir, 'apks', apk)]);
    if (existsSync(join(dir, 'sdcard'))) await this.adbRun(['push', join(dir, 'sdcard') + '/.', '/sdcard/']);
  }

  async shutdown({ saveTo }: { saveTo: string | null }): Promise<void> {
    if (this.stopping) return this.whenStopped;
    if (saveTo) await this.save(saveTo);
    this.stopping = true;
    try {
      await this.adbRun(['emu', 'kill']);
    } catch {
      // fall through to the signal
    }
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15_000);
    await this.whenStopped;
    clearTimeout(timer);
  }
}
