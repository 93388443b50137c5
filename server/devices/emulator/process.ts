/**
 * One emulator process: its command line, its output (kept for errors and for the lines the
 * backend watches, like a refused snapshot), its exit, and the startup failures the
 * reference lists turned into public failures that quote the tool and say what to do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PhoneBootError } from '../types.js';
import type { Environment } from './sdk.js';

/** Flags for a headless host (AER's defaults). */
export const HEADLESS_FLAGS = ['-no-window', '-no-audio', '-no-boot-anim', '-gpu', 'swiftshader_indirect'];

export interface LaunchPlan {
  avd: string;
  consolePort: number;
  /** Read-only instance (temporary phones): many share one AVD and nothing is written back. */
  readOnly: boolean;
  /** Snapshot to load at boot, or null for a cold boot. */
  snapshot: string | null;
}

export function emulatorArgs(plan: LaunchPlan): string[] {
  const args = ['-avd', plan.avd, '-port', String(plan.consolePort), ...HEADLESS_FLAGS];
  if (plan.readOnly) args.push('-read-only');
  // Saving happens only through the console (`avd snapshot save`), never on exit: a kill
  // must not spend seconds writing gigabytes of quickboot state nobody loads.
  if (plan.snapshot) args.push('-snapshot', plan.snapshot, '-no-snapshot-save');
  else args.push('-no-snapshot-load', '-no-snapshot-save');
  return args;
}

/**
 * How the emulator says it did not load the snapshot it was given and cold-booted instead:
 * `Failed to load snapshot 'NAME'` when a load it attempted failed, and Quickboot's
 * `Cold boot: <reason>` when its checks refused the snapshot (a changed image, config or
 * emulator build), which older builds print alone. `Cold boot:  requested by the user`
 * answers -no-snapshot-load and refuses nothing.
 */
export const SNAPSHOT_REFUSED = /Failed to load snapshot|Cold boot: (?!\s*requested by the user)/;
const PORT_TAKEN = /too many emulator instances are running/;

/** The last output kept for errors and logs; the facts the backend acts on are latched per line. */
const KEPT_OUTPUT = 8000;

export class EmulatorProcess {
  private output = '';
  private readonly watchers = new Set<(line: string) => void>();
  /**
   * Set from each output line as it comes, so a chatty boot (a real one prints hundreds of
   * lines) cannot push the fact out of the kept tail before the backend looks.
   */
  private refusedSnapshot: string | null = null;
  private portTaken = false;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitedNow = false;

  private constructor(readonly child: ChildProcess) {
    // Lines are cut per stream: stdout and stderr chunks interleave.
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.output = (this.output + text).slice(-KEPT_OUTPUT);
        partial += text;
        let nl: number;
        while ((nl = partial.indexOf('\n')) >= 0) {
          this.line(partial.slice(0, nl));
          partial = partial.slice(nl + 1);
        }
      });
      stream?.on('end', () => {
        if (partial) this.line(partial);
        partial = '';
      });
    }
    this.exited = new Promise((resolve) => {
      child.once('error', (error) => {
        this.output += `\n${error.message}`;
        this.exitedNow = true;
        resolve({ code: null, signal: null });
      });
      child.once('exit', (code, signal) => {
        this.exitedNow = true;
        resolve({ code, signal });
      });
    });
  }

  private line(line: string): void {
    if (SNAPSHOT_REFUSED.test(line)) this.refusedSnapshot ??= line.replace(/^\w+\s*\|\s*/, '').trim();
    if (PORT_TAKEN.test(line)) this.portTaken = true;
    for (const w of this.watchers) w(line);
  }

  static spawn(emulator: string, args: string[], env: Environment): EmulatorProcess {
    return new EmulatorProcess(spawn(emulator, args, { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  get hasExited(): boolean {
    return this.exitedNow;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The last lines the emulator printed, for logs and errors. */
  tail(lines = 6): string {
    return this.output.trim().split('\n').slice(-lines).join('\n');
  }

  /** Calls `listener` for every output line from now on (and for none already printed). */
  onLine(listener: (line: string) => void): void {
    this.watchers.add(listener);
  }

  /**
   * What it said when it did not load the snapshot it was given (and cold-booted), e.g.
   * "Cold boot: Different AVD configuration"; null while it has said nothing of the kind.
   */
  get snapshotRefusal(): string | null {
    return this.refusedSnapshot;
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (!this.exitedNow) this.child.kill(signal);
  }

  /** True when it aborted because its port was taken between our check and its bind. */
  lostPortRace(): boolean {
    return this.portTaken;
  }

  /** The public failure for an emulator that stopped while starting, in its own words. */
  startupFailure(exit: { code: number | null; signal: NodeJS.Signals | null }): PhoneBootError {
    const said = this.tail(4);
    const quote = said ? `: "${said.replace(/\s*\n\s*/g, ' ')}"` : '';
    if (/requires hardware acceleration|\/dev\/kvm|KVM/.test(this.output)) {
      return new PhoneBootError(
        'emulator_no_kvm',
        `The emulator needs hardware acceleration (KVM) on this machine and has none${quote}. On Linux: enable virtualization in the BIOS, load the kvm_intel or kvm_amd module, and give this user access to /dev/kvm (\`sudo usermod -aG kvm $USER\`, then log in again); \`phonelease doctor\` checks it. Without KVM, run the server with --device virtual.`,
      );
    }
    if (/Unknown AVD name/.test(this.output)) {
      return new PhoneBootError(
        'emulator_no_avd',
        `The emulator does not know the AVD it was asked to run${quote}. Create one with avdmanager or set PHONELEASE_AVD to a name \`emulator -list-avds\` prints.`,
      );
    }
    if (
      /Another emulator instance is running|Running multiple emulators with the same AVD/.test(this.output)
    ) {
      return new PhoneBootError(
        'emulator_avd_busy',
        `The emulator refused to start because the AVD is in use${quote}. Close other emulators of this AVD and retry.`,
      );
    }
    const how = exit.signal ? `signal ${exit.signal}` : `exit ${exit.code}`;
    return new PhoneBootError(
      'emulator_exited',
      `The emulator stopped while starting (${how})${quote}. Run \`phonelease doctor\` to check this machine.`,
    );
  }
}
