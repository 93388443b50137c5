/**
 * The phone's process table, one for every shell session: system services and apps, and the
 * processes that shells start (each command a process with a pid, parent, process group,
 * session, uid, name, command line and terminal). `ps`, `/proc/<pid>`, `pidof`, `pgrep` and
 * `kill` read and signal this table, whichever session they run in.
 *
 * Processes here run inside the server, so they stop cooperatively: a signal either runs a
 * handler the process registered (a shell's `trap`, a long-running command that finishes
 * its work on SIGINT), is ignored, or terminates the process, which aborts its `terminated`
 * signal; the code running the process stops, and the process reports 128+N.
 */
import { basename } from './fs.js';
import { SIGKILL, defaultAction, isCatchable } from './signals.js';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  user: string;
  /** Process name as ps prints it (basename of argv[0]; the package name for apps). */
  name: string;
  vsz: number;
  rss: number;
  /** Command line for `pgrep -f` / `ps -o ARGS`: argv joined by spaces. */
  args: string;
  startedMs: number;
  uid?: number;
  /** Process group and session (the group leader's and session leader's pid). */
  pgid?: number;
  sid?: number;
  /** Controlling terminal, e.g. `pts/0`. */
  tty?: string | null;
  /** ps S: R running, S sleeping. */
  state?: string;
  /** The kernel's 15-character command name (/proc/PID/comm, what pgrep matches). */
  comm?: string;
  argv?: readonly string[];
}

/** Who sends a signal: root may signal anyone, others only their own uid's processes. */
export interface Sender {
  uid: number;
}

export type SignalResult = 'ok' | 'no-such-process' | 'not-permitted' | 'unsupported';

const ADBD_PID = 455;
const ZYGOTE_PID = 512;

const SYSTEM_PROCESSES: ReadonlyArray<Omit<ProcessInfo, 'startedMs'>> = [
  {
    pid: 1,
    ppid: 0,
    user: 'root',
    name: 'init',
    vsz: 10932508,
    rss: 11200,
    args: '/system/bin/init second_stage',
  },
  { pid: 2, ppid: 0, user: 'root', name: '[kthreadd]', vsz: 0, rss: 0, args: '[kthreadd]' },
  { pid: 312, ppid: 1, user: 'logd', name: 'logd', vsz: 10987612, rss: 9120, args: '/system/bin/logd' },
  {
    pid: 331,
    ppid: 1,
    user: 'system',
    name: 'servicemanager',
    vsz: 10891232,
    rss: 6480,
    args: '/system/bin/servicemanager',
  },
  {
    pid: 402,
    ppid: 1,
    user: 'system',
    name: 'surfaceflinger',
    vsz: 11321944,
    rss: 35712,
    args: '/system/bin/surfaceflinger',
  },
  {
    pid: ADBD_PID,
    ppid: 1,
    user: 'shell',
    name: 'adbd',
    vsz: 10972340,
    rss: 8124,
    args: '/apex/com.android.adbd/bin/adbd --root_seclabel=u:r:su:s0',
  },
  { pid: ZYGOTE_PID, ppid: 1, user: 'root', name: 'zygote64', vsz: 14917420, rss: 101384, args: 'zygote64' },
  {
    pid: 860,
    ppid: ZYGOTE_PID,
    user: 'system',
    name: 'system_server',
    vsz: 21373436,
    rss: 312456,
    args: 'system_server',
  },
  {
    pid: 1120,
    ppid: ZYGOTE_PID,
    user: 'u0_a201',
    name: 'com.android.systemui',
    vsz: 16980120,
    rss: 188344,
    args: 'com.android.systemui',
  },
  {
    pid: 1188,
    ppid: ZYGOTE_PID,
    user: 'radio',
    name: 'com.android.phone',
    vsz: 15240112,
    rss: 92872,
    args: 'com.android.phone',
  },
  {
    pid: 1302,
    ppid: ZYGOTE_PID,
    user: 'u0_a170',
    name: 'com.google.android.inputmethod.latin',
    vsz: 15602240,
    rss: 120440,
    args: 'com.google.android.inputmethod.latin',
  },
  {
    pid: 1421,
    ppid: ZYGOTE_PID,
    user: 'u0_a153',
    name: 'com.android.launcher3',
    vsz: 16120004,
    rss: 151020,
    args: 'com.android.launcher3',
  },
];

/**
 * The kernel's command name: 15 characters. Android's runtime names app processes after
 * the end of their package (`ndroid.systemui`); other programs keep their first 15.
 */
export function commName(name: string): string {
  if (name.length <= 15) return name;
  return name.includes('.') && !name.includes('/') ? name.slice(-15) : name.slice(0, 15);
}

const UID_BY_USER: Record<string, number> = { root: 0, system: 1000, radio: 1001, logd: 1036, shell: 2000 };

/** The uid of a ps user name (`u0_a153` is 10153). */
export function uidOfUser(user: string): number {
  const app = /^u0_a(\d+)$/.exec(user);
  if (app) return 10000 + Number(app[1]);
  return UID_BY_USER[user] ?? 9999;
}

export interface SpawnOptions {
  /** The parent: a process of this table, or the pid of a system process (adbd). */
  parent: Process | number;
  argv: readonly string[];
  uid: number;
  user: string;
  /** Its terminal; by default the parent's. */
  tty?: string | null;
  /** Starts a new session and process group (setsid), as adbd does for each shell. */
  newSession?: boolean;
  /** Starts a new process group in the parent's session (setpgid), as timeout does. */
  newGroup?: boolean;
}

type Handler = (signal: number) => void;

/** A process a shell started: a shell, a subshell, or a command it runs. */
export class Process {
  readonly info: ProcessInfo;
  private readonly death = new AbortController();
  private readonly handlers = new Map<number, Handler>();
  private readonly ignored = new Set<number>();
  private gone = false;
  private holds: (() => void)[] = [];
  private deathStatus: Promise<number> | null = null;
  /** The signal that terminated this process, once one did. */
  termSignal: number | null = null;

  constructor(
    info: ProcessInfo,
    private readonly table: ProcessTable,
  ) {
    this.info = info;
  }

  get pid(): number {
    return this.info.pid;
  }

  /** Aborted (reason: the signal number) when a signal terminates the process. */
  get terminated(): AbortSignal {
    return this.death.signal;
  }

  get exited(): boolean {
    return this.gone;
  }

  /**
   * Runs `handler` when one of `signals` arrives instead of the default action (SIGKILL and
   * SIGSTOP cannot be caught). Returns a function that restores the default.
   */
  handle(signals: number | readonly number[], handler: Handler): () => void {
    const list = typeof signals === 'number' ? [signals] : signals;
    for (const s of list) if (isCatchable(s)) this.handlers.set(s, handler);
    return () => {
      for (const s of list) if (this.handlers.get(s) === handler) this.handlers.delete(s);
    };
  }

  /** Back to the default action for a signal. */
  unhandle(signal: number): void {
    this.handlers.delete(signal);
  }

  /** Resolves with 128+N once a signal terminates the process (never if it exits by itself). */
  whenTerminated(): Promise<number> {
    this.deathStatus ??= new Promise((resolve) => {
      const died = () => resolve(128 + (this.termSignal ?? SIGKILL));
      if (this.death.signal.aborted) died();
      else this.death.signal.addEventListener('abort', died, { once: true });
    });
    return this.deathStatus;
  }

  /**
   * What the process holds open (its outputs, as file descriptors): released when it exits
   * or when exec gives it others.
   */
  setHolds(releases: (() => void)[]): void {
    const previous = this.holds;
    this.holds = releases;
    for (const release of previous) release();
  }

  /** SIG_IGN (`trap '' SIG`, nohup); kept across exec and by children. */
  ignore(signal: number, ignored = true): void {
    if (!isCatchable(signal)) return;
    if (ignored) this.ignored.add(signal);
    else this.ignored.delete(signal);
  }

  isIgnored(signal: number): boolean {
    return this.ignored.has(signal);
  }

  /** Signals a handler catches here. */
  caughtSignals(): number[] {
    return [...this.handlers.keys()];
  }

  /** Signals ignored here, which a child inherits. */
  ignoredSignals(): number[] {
    return [...this.ignored];
  }

  /** exec(2): the process becomes another program; caught signals return to their default. */
  exec(argv: readonly string[]): void {
    this.handlers.clear();
    const name = basename(argv[0] ?? 'sh');
    this.info.name = name;
    this.info.comm = commName(name);
    this.info.argv = [...argv];
    this.info.args = argv.join(' ');
  }

  /** Delivers a signal (permission already checked). */
  deliver(signal: number): SignalResult {
    if (this.gone || this.termSignal !== null) return 'ok';
    if (signal === 0) return 'ok';
    if (signal === SIGKILL) {
      this.terminate(SIGKILL);
      return 'ok';
    }
    const action = defaultAction(signal);
    if (action === 'stop' || action === 'continue') return 'unsupported';
    if (this.ignored.has(signal)) return 'ok';
    const handler = this.handlers.get(signal);
    if (handler) {
      handler(signal);
      return 'ok';
    }
    if (action === 'terminate') this.terminate(signal);
    return 'ok';
  }

  /** The default action of a fatal signal: the process ends, reporting 128+signal. */
  terminate(signal: number): void {
    if (this.gone || this.termSignal !== null) return;
    this.termSignal = signal;
    this.info.state = 'R';
    this.death.abort(signal);
  }

  /** The process has ended: it leaves the table and its children get init as parent. */
  exit(): void {
    if (this.gone) return;
    this.gone = true;
    this.table.remove(this);
    this.setHolds([]);
  }
}

export class ProcessTable {
  private readonly apps = new Map<string, ProcessInfo>();
  private readonly running = new Map<number, Process>();
  private readonly ptys = new Set<number>();
  private nextPid = 4000;
  /** When the phone booted: the table is made as it boots. */
  private readonly bootMs: number;

  constructor(
    private readonly now: () => number = () => Date.now(),
    /** Called when a permitted fatal signal reaches an app's process. */
    private readonly appKilled: (name: string) => void = () => undefined,
  ) {
    this.bootMs = now();
  }

  /** Every process, by pid: system services, apps, and what shells run. */
  list(): ProcessInfo[] {
    return [
      // The system's services have run since the phone booted.
      ...SYSTEM_PROCESSES.map((p) => ({ ...p, startedMs: this.bootMs })),
      ...this.apps.values(),
      ...[...this.running.values()].map((p) => p.info),
    ].sort((a, b) => a.pid - b.pid);
  }

  /** Starts (or returns) the process of a package; user is the app's u0_aNNN. */
  start(name: string, user: string, args = name): ProcessInfo {
    const existing = this.apps.get(name);
    if (existing) return existing;
    const p: ProcessInfo = {
      pid: this.nextPid,
      ppid: ZYGOTE_PID,
      user,
      name,
      vsz: 15000000,
      rss: 90000,
      args,
      startedMs: this.now(),
    };
    this.nextPid += 1 + (this.nextPid % 7);
    this.apps.set(name, p);
    return p;
  }

  /** Stops every process whose name is the package or one of its `pkg:sub` processes. */
  stopPackage(pkg: string): boolean {
    let any = false;
    for (const name of [...this.apps.keys()]) {
      if (name === pkg || name.startsWith(`${pkg}:`)) {
        this.apps.delete(name);
        any = true;
      }
    }
    return any;
  }

  /** The names of the apps' running processes (`pkg` or `pkg:sub`). */
  appNames(): string[] {
    return [...this.apps.keys()];
  }

  isRunning(name: string): boolean {
    return this.apps.has(name) || SYSTEM_PROCESSES.some((p) => p.name === name);
  }

  /** A process by pid, looked up where it lives (the log asks this for every line). */
  byPid(pid: number): ProcessInfo | undefined {
    const running = this.running.get(pid)?.info;
    if (running) return running;
    for (const app of this.apps.values()) if (app.pid === pid) return app;
    const system = SYSTEM_PROCESSES.find((p) => p.pid === pid);
    return system && { ...system, startedMs: this.bootMs };
  }

  /** A process a shell started, by pid. */
  get(pid: number): Process | undefined {
    return this.running.get(pid);
  }

  /** Allocates a pid for something that shows up in logs without being a process here. */
  transientPid(): number {
    const pid = this.nextPid;
    this.nextPid += 1;
    return pid;
  }

  /** fork(2)+exec(2): a new process of `parent`, in its group and session unless newSession. */
  spawn(options: SpawnOptions): Process {
    const pid = this.transientPid();
    const parent = typeof options.parent === 'number' ? null : options.parent;
    const ppid = parent ? parent.pid : (options.parent as number);
    const name = basename(options.argv[0] ?? 'sh');
    const info: ProcessInfo = {
      pid,
      ppid,
      user: options.user,
      uid: options.uid,
      name,
      comm: commName(name),
      argv: [...options.argv],
      args: options.argv.join(' '),
      vsz: 10823212,
      rss: 3468,
      startedMs: this.now(),
      pgid: options.newSession || options.newGroup || !parent ? pid : parent.info.pgid,
      sid: options.newSession || !parent ? pid : parent.info.sid,
      tty: options.tty !== undefined ? options.tty : (parent?.info.tty ?? null),
      state: 'S',
    };
    const process = new Process(info, this);
    // A child inherits what its parent ignores (but not what it catches).
    if (parent) for (const s of parent.ignoredSignals()) process.ignore(s);
    this.running.set(pid, process);
    return process;
  }

  /** Called by Process.exit(). */
  remove(process: Process): void {
    if (this.running.get(process.pid) !== process) return;
    this.running.delete(process.pid);
    // Orphans are adopted by init, as on Linux.
    for (const p of this.running.values()) if (p.info.ppid === process.pid) p.info.ppid = 1;
  }

  /** kill(2) of one pid, with the kernel's permission rule. */
  signal(pid: number, signal: number, sender: Sender): SignalResult {
    const own = this.running.get(pid);
    if (own) {
      if (sender.uid !== 0 && own.info.uid !== sender.uid) return 'not-permitted';
      return own.deliver(signal);
    }
    const info = this.byPid(pid);
    if (!info) return 'no-such-process';
    if (sender.uid !== 0 && uidOfUser(info.user) !== sender.uid) return 'not-permitted';
    if (signal === 0) return 'ok';
    const action = defaultAction(signal);
    if (action === 'stop' || action === 'continue') return 'unsupported';
    // An app of the sender's own uid (run-as) dies of a fatal signal.
    if (action === 'terminate' && this.apps.has(info.name)) this.appKilled(info.name);
    return 'ok';
  }

  /** kill(2) of a process group (`kill -- -PGID`, a shell passing a signal to its group). */
  signalGroup(pgid: number, signal: number, sender: Sender): SignalResult {
    const members = [...this.running.values()].filter((p) => p.info.pgid === pgid);
    if (members.length === 0) return 'no-such-process';
    let result: SignalResult = 'not-permitted';
    for (const p of members) {
      if (sender.uid !== 0 && p.info.uid !== sender.uid) continue;
      result = p.deliver(signal);
    }
    return result;
  }

  /** What a process ignores and catches (/proc/PID/status SigIgn and SigCgt). */
  signalsOf(pid: number): { ignored: number[]; caught: number[] } {
    const p = this.running.get(pid);
    return p ? { ignored: p.ignoredSignals(), caught: p.caughtSignals() } : { ignored: [], caught: [] };
  }

  /** The lowest free pseudo-terminal number (`/dev/pts/N`), held until closePty. */
  openPty(): number {
    let n = 0;
    while (this.ptys.has(n)) n++;
    this.ptys.add(n);
    return n;
  }

  closePty(n: number): void {
    this.ptys.delete(n);
  }

  /** The phone shuts down: every process it runs is killed. */
  killAll(): void {
    for (const p of [...this.running.values()]) p.deliver(SIGKILL);
  }
}

/** The pid of adbd, parent of every shell an ADB stream starts. */
export const ADBD = ADBD_PID;
