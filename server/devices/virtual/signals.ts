/**
 * Linux signals as an Android 14 phone (arm64, bionic) numbers and names them: the names
 * toybox and mksh print, bionic's descriptions (`kill -l`), and what each does to a process
 * that neither catches nor ignores it.
 */

export interface SignalInfo {
  number: number;
  /** Without the SIG prefix, as `kill -l` prints it. */
  name: string;
  /** strsignal(3) on bionic. */
  description: string;
}

export const SIGHUP = 1;
export const SIGINT = 2;
export const SIGQUIT = 3;
export const SIGKILL = 9;
export const SIGPIPE = 13;
export const SIGTERM = 15;

export const SIGNALS: readonly SignalInfo[] = (
  [
    [1, 'HUP', 'Hangup'],
    [2, 'INT', 'Interrupt'],
    [3, 'QUIT', 'Quit'],
    [4, 'ILL', 'Illegal instruction'],
    [5, 'TRAP', 'Trap'],
    [6, 'ABRT', 'Aborted'],
    [7, 'BUS', 'Bus error'],
    [8, 'FPE', 'Floating point exception'],
    [9, 'KILL', 'Killed'],
    [10, 'USR1', 'User signal 1'],
    [11, 'SEGV', 'Segmentation fault'],
    [12, 'USR2', 'User signal 2'],
    [13, 'PIPE', 'Broken pipe'],
    [14, 'ALRM', 'Alarm clock'],
    [15, 'TERM', 'Terminated'],
    [16, 'STKFLT', 'Stack fault'],
    [17, 'CHLD', 'Child exited'],
    [18, 'CONT', 'Continue'],
    [19, 'STOP', 'Stopped (signal)'],
    [20, 'TSTP', 'Stopped'],
    [21, 'TTIN', 'Stopped (tty input)'],
    [22, 'TTOU', 'Stopped (tty output)'],
    [23, 'URG', 'Urgent I/O condition'],
    [24, 'XCPU', 'CPU time limit exceeded'],
    [25, 'XFSZ', 'File size limit exceeded'],
    [26, 'VTALRM', 'Virtual timer expired'],
    [27, 'PROF', 'Profiling timer expired'],
    [28, 'WINCH', 'Window size changed'],
    [29, 'IO', 'I/O possible'],
    [30, 'PWR', 'Power failure'],
    [31, 'SYS', 'Bad system call'],
  ] as const
).map(([number, name, description]) => ({ number, name, description }));

/** Signal numbers by name, with the aliases toybox and mksh accept (POLL, IOT). */
const BY_NAME: ReadonlyMap<string, number> = new Map([
  ...SIGNALS.map((s) => [s.name, s.number] as const),
  ['POLL', 29],
  ['IOT', 6],
]);

/**
 * The number of a signal given as toybox's sig_to_num takes it: a number, or a name with or
 * without SIG in any case (`9`, `KILL`, `sigkill`). `0` is the probe "signal". Null when unknown.
 */
export function signalNumber(spec: string): number | null {
  if (/^\d+$/.test(spec)) {
    const n = Number(spec);
    return n <= 64 ? n : null;
  }
  const upper = spec.toUpperCase();
  const name = upper.startsWith('SIG') && upper.length > 3 ? upper.slice(3) : upper;
  return BY_NAME.get(name) ?? null;
}

export function signalName(n: number): string | undefined {
  return SIGNALS[n - 1]?.name;
}

export type DefaultAction = 'terminate' | 'ignore' | 'stop' | 'continue';

/** What a signal does to a process that has no handler for it (signal(7)). */
export function defaultAction(n: number): DefaultAction {
  switch (n) {
    case 17: // CHLD
    case 23: // URG
    case 28: // WINCH
      return 'ignore';
    case 18: // CONT
      return 'continue';
    case 19: // STOP
    case 20: // TSTP
    case 21: // TTIN
    case 22: // TTOU
      return 'stop';
    default:
      return 'terminate';
  }
}

/** SIGKILL and SIGSTOP can be neither caught nor ignored. */
export function isCatchable(n: number): boolean {
  return n !== SIGKILL && n !== 19;
}
