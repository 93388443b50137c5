/**
 * Finding app crashes in a phone's log (`logcat -v threadtime`), as they are logged on
 * Android:
 *
 * - a Java crash: the runtime's default handler logs, from the app's pid, at error priority
 *   under the tag AndroidRuntime, `FATAL EXCEPTION: <thread>`, `Process: <name>, PID: <pid>`,
 *   the exception's first line and its stack (`\tat ...`, `Caused by: ...`);
 * - an ANR: system_server's ActivityManager logs `ANR in <process> (<component>)`, then
 *   `PID:`, `Reason:` and load figures, at error priority;
 * - a native crash: crash_dump writes the tombstone to the log under the tag DEBUG at fatal
 *   priority, starting with the header `*** *** *** ...`, then `pid: N, tid: N, name: T  >>>
 *   <process> <<<` and `signal N (SIG...), code ...`.
 *
 * The detector reads lines one at a time (a log followed as it is written) and knows each
 * crash once its lines have ended: at the next line of that pid under another tag, the next
 * crash of the same kind from that pid, or end().
 */

export type CrashKind = 'java' | 'anr' | 'native';

export interface AppCrash {
  kind: CrashKind;
  /** The app's package (its process name without a `:subprocess` suffix). */
  package: string;
  /** The process name as logged (`com.example:sync`). */
  process: string;
  /** The crashed process's pid, when the log names it. */
  pid: number | null;
  /**
   * One line that says what happened: the exception's first line (`java.lang.X: message`),
   * the ANR's reason, or the native signal (`signal 11 (SIGSEGV), code 1 ..., fault addr 0x0`).
   */
  summary: string;
  /** The crash's log lines, as they were in the log. */
  lines: string[];
}

/** One threadtime line: `MM-DD hh:mm:ss.mmm  PID  TID P TAG     : message`. */
interface LogLine {
  pid: number;
  tid: number;
  priority: string;
  tag: string;
  message: string;
  raw: string;
}

const THREADTIME =
  /^(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d\.\d{3,9}\s+(\d+)\s+(\d+) ([VDIWEFA]) (.*?)\s*: ?(.*)$/;

/** Parses a threadtime line; null for anything else (`--------- beginning of main`, blank lines). */
export function parseThreadtime(raw: string): LogLine | null {
  const m = THREADTIME.exec(raw);
  if (!m) return null;
  return { pid: Number(m[1]), tid: Number(m[2]), priority: m[3]!, tag: m[4]!, message: m[5]!, raw };
}

const TOMBSTONE_HEADER = '*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***';

/** A crash whose lines are still coming. */
interface Open {
  kind: CrashKind;
  /** The pid that logs it (the app's for Java, system_server's for ANR, crash_dump's for native). */
  loggerPid: number;
  tag: string;
  process: string | null;
  pid: number | null;
  summary: string | null;
  lines: string[];
}

function packageOf(process: string): string {
  return process.split(':')[0]!;
}

export class CrashDetector {
  readonly #found: AppCrash[] = [];
  /** Open crashes by the pid that logs them. */
  readonly #open = new Map<number, Open>();
  readonly #onCrash: ((crash: AppCrash) => void) | undefined;

  /** `onCrash` hears of each crash once its lines have ended. */
  constructor(onCrash?: (crash: AppCrash) => void) {
    this.#onCrash = onCrash;
  }

  /** Crashes whose lines have ended, in the order they happened. */
  get crashes(): readonly AppCrash[] {
    return this.#found;
  }

  /** Reads one line of the log (without its newline). */
  push(raw: string): void {
    const line = parseThreadtime(raw);
    if (!line) return;
    const open = this.#open.get(line.pid);
    const start = this.#startOf(line);
    if (open && !start && line.tag === open.tag && this.#continues(open, line)) {
      this.#add(open, line);
      return;
    }
    if (open) this.#close(line.pid);
    if (start) {
      this.#open.set(line.pid, start);
      this.#add(start, line);
    }
  }

  /** The log has ended: crashes still open are complete. */
  end(): void {
    for (const pid of [...this.#open.keys()]) this.#close(pid);
  }

  #startOf(line: LogLine): Open | null {
    const base = { loggerPid: line.pid, tag: line.tag, process: null, pid: null, summary: null, lines: [] };
    if (
      line.tag === 'AndroidRuntime' &&
      line.priority === 'E' &&
      line.message.startsWith('FATAL EXCEPTION:')
    ) {
      return { ...base, kind: 'java', pid: line.pid };
    }
    if (line.tag === 'ActivityManager' && line.priority === 'E') {
      const anr = /^ANR in (\S+)/.exec(line.message);
      if (anr) return { ...base, kind: 'anr', process: anr[1]! };
    }
    if (line.tag === 'DEBUG' && line.message.trim() === TOMBSTONE_HEADER) return { ...base, kind: 'native' };
    return null;
  }

  /** A line of the same pid and tag belongs to the open crash while its priority holds. */
  #continues(open: Open, line: LogLine): boolean {
    if (open.kind === 'native') return line.priority === 'F';
    return line.priority === 'E';
  }

  #add(open: Open, line: LogLine): void {
    open.lines.push(line.raw);
    const message = line.message;
    switch (open.kind) {
      case 'java': {
        const proc = /^Process: (.+?), PID: (\d+)/.exec(message);
        if (proc) {
          open.process = proc[1]!;
          open.pid = Number(proc[2]);
        } else if (open.summary === null && open.lines.length > 1 && !message.startsWith('\t')) {
          // The first line after the header (and Process:) is the exception's.
          open.summary = message;
        }
        break;
      }
      case 'anr': {
        const pid = /^PID: (\d+)/.exec(message);
        if (pid) open.pid = Number(pid[1]);
        const reason = /^Reason: (.*)$/.exec(message);
        if (reason && open.summary === null) open.summary = `Application Not Responding: ${reason[1]}`;
        break;
      }
      case 'native': {
        const who = /^pid: (\d+), tid: \d+, name: .*>>> (.+?) <<<$/.exec(message);
        if (who) {
          open.pid = Number(who[1]);
          open.process = who[2]!;
        }
        const cmdline = /^Cmdline: (\S+)/.exec(message);
        if (cmdline && open.process === null) open.process = cmdline[1]!;
        if (/^signal \d+ \(/.test(message) && open.summary === null) open.summary = message;
        break;
      }
    }
  }

  #close(loggerPid: number): void {
    const open = this.#open.get(loggerPid);
    if (!open) return;
    this.#open.delete(loggerPid);
    const process = open.process ?? 'unknown process';
    const crash: AppCrash = {
      kind: open.kind,
      package: packageOf(process),
      process,
      pid: open.pid,
      summary: open.summary ?? DEFAULT_SUMMARY[open.kind],
      lines: open.lines,
    };
    this.#found.push(crash);
    this.#onCrash?.(crash);
  }
}

const DEFAULT_SUMMARY: Record<CrashKind, string> = {
  java: 'an uncaught exception',
  anr: 'Application Not Responding',
  native: 'a native crash',
};

/** Every crash in a whole log (threadtime lines). */
export function findCrashes(log: string): AppCrash[] {
  const detector = new CrashDetector();
  for (const line of log.split(/\r?\n/)) detector.push(line);
  detector.end();
  return [...detector.crashes];
}
