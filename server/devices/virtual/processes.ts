/** The process table `ps`, `pidof` and `dumpsys activity processes` report. */

export interface ProcessInfo {
  pid: number;
  ppid: number;
  user: string;
  /** Process name as ps prints it (package name for apps). */
  name: string;
  vsz: number;
  rss: number;
  /** Command line for `pgrep -f` / `ps -o ARGS`. */
  args: string;
  startedMs: number;
}

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
    pid: 455,
    ppid: 1,
    user: 'shell',
    name: 'adbd',
    vsz: 10972340,
    rss: 8124,
    args: '/apex/com.android.adbd/bin/adbd --root_seclabel=u:r:su:s0',
  },
  { pid: 512, ppid: 1, user: 'root', name: 'zygote64', vsz: 14917420, rss: 101384, args: 'zygote64' },
  {
    pid: 860,
    ppid: 512,
    user: 'system',
    name: 'system_server',
    vsz: 21373436,
    rss: 312456,
    args: 'system_server',
  },
  {
    pid: 1120,
    ppid: 512,
    user: 'u0_a201',
    name: 'com.android.systemui',
    vsz: 16980120,
    rss: 188344,
    args: 'com.android.systemui',
  },
  {
    pid: 1188,
    ppid: 512,
    user: 'radio',
    name: 'com.android.phone',
    vsz: 15240112,
    rss: 92872,
    args: 'com.android.phone',
  },
  {
    pid: 1302,
    ppid: 512,
    user: 'u0_a170',
    name: 'com.google.android.inputmethod.latin',
    vsz: 15602240,
    rss: 120440,
    args: 'com.google.android.inputmethod.latin',
  },
  {
    pid: 1421,
    ppid: 512,
    user: 'u0_a153',
    name: 'com.android.launcher3',
    vsz: 16120004,
    rss: 151020,
    args: 'com.android.launcher3',
  },
];

export class ProcessTable {
  private readonly apps = new Map<string, ProcessInfo>();
  private nextPid = 4000;

  constructor(private readonly now: () => number = () => Date.now()) {}

  list(): ProcessInfo[] {
    const started = this.now();
    return [...SYSTEM_PROCESSES.map((p) => ({ ...p, startedMs: started })), ...this.apps.values()];
  }

  /** Starts (or returns) the process of a package; user is the app's u0_aNNN. */
  start(name: string, user: string, args = name): ProcessInfo {
    const existing = this.apps.get(name);
    if (existing) return existing;
    const p: ProcessInfo = {
      pid: this.nextPid,
      ppid: 512,
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

  isRunning(name: string): boolean {
    return this.apps.has(name) || SYSTEM_PROCESSES.some((p) => p.name === name);
  }

  byPid(pid: number): ProcessInfo | undefined {
    return this.list().find((p) => p.pid === pid);
  }

  /** Allocates a pid for a short-lived shell command (ps shows itself, `$$`). */
  transientPid(): number {
    const pid = this.nextPid;
    this.nextPid += 1;
    return pid;
  }
}
