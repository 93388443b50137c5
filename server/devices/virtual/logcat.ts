/** The phone's log buffer: what `logcat` prints and follows. */

export type LogPriority = 'V' | 'D' | 'I' | 'W' | 'E' | 'F';

export interface LogEntry {
  timeMs: number;
  pid: number;
  tid: number;
  priority: LogPriority;
  tag: string;
  message: string;
}

/** Ring buffer size: enough for a test's worth of events, small enough for idle phones. */
const CAPACITY = 4000;

/**
 * logd's LOGGER_ENTRY_MAX_PAYLOAD: priority byte, tag, NUL, message and NUL together. Longer
 * messages are cut, as liblog does, so the buffer holds at most CAPACITY * 4 KiB.
 */
export const LOG_MAX_PAYLOAD = 4068;

/** The longest prefix of text that is at most maxBytes in UTF-8, never splitting a character. */
function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3) return text; // fast path: even all 3-byte characters fit
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  // Step back over continuation bytes so the cut falls between characters.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}

export class LogBuffer {
  private entries: LogEntry[] = [];
  private readonly followers = new Set<(entry: LogEntry) => void>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  add(entry: Omit<LogEntry, 'timeMs'> & { timeMs?: number }): void {
    const tag = truncateUtf8(entry.tag, LOG_MAX_PAYLOAD - 3);
    const message = truncateUtf8(entry.message, LOG_MAX_PAYLOAD - 3 - Buffer.byteLength(tag));
    const full: LogEntry = { ...entry, tag, message, timeMs: entry.timeMs ?? this.now() };
    this.entries.push(full);
    if (this.entries.length > CAPACITY) this.entries.splice(0, this.entries.length - CAPACITY);
    for (const f of this.followers) f(full);
  }

  snapshot(): readonly LogEntry[] {
    return this.entries;
  }

  clear(): void {
    this.entries = [];
  }

  follow(listener: (entry: LogEntry) => void): () => void {
    this.followers.add(listener);
    return () => this.followers.delete(listener);
  }
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

export function formatLogTime(ms: number, withYear = false): string {
  const d = new Date(ms);
  const base = `${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${String(d.getUTCMilliseconds()).padStart(3, '0')}`;
  return withYear ? `${d.getUTCFullYear()}-${base}` : base;
}

export type LogFormat = 'threadtime' | 'brief' | 'time' | 'tag' | 'process' | 'raw' | 'long';

/** One entry in logcat's `-v` formats (threadtime is adb logcat's default). */
export function formatLogEntry(e: LogEntry, format: LogFormat): string {
  switch (format) {
    case 'brief':
      return `${e.priority}/${e.tag.padEnd(8)}(${String(e.pid).padStart(5)}): ${e.message}`;
    case 'time':
      return `${formatLogTime(e.timeMs)} ${e.priority}/${e.tag.padEnd(8)}(${String(e.pid).padStart(5)}): ${e.message}`;
    case 'tag':
      return `${e.priority}/${e.tag.padEnd(8)}: ${e.message}`;
    case 'process':
      return `${e.priority}(${String(e.pid).padStart(5)}) ${e.message}  (${e.tag})`;
    case 'raw':
      return e.message;
    case 'long':
      return `[ ${formatLogTime(e.timeMs)} ${String(e.pid).padStart(5)}:${String(e.tid).padStart(5)} ${e.priority}/${e.tag} ]\n${e.message}\n`;
    default:
      return `${formatLogTime(e.timeMs)} ${String(e.pid).padStart(5)} ${String(e.tid).padStart(5)} ${e.priority} ${e.tag.padEnd(8)}: ${e.message}`;
  }
}

/**
 * What a phone's log holds once it has booted: init starting the native services, zygote,
 * system_server coming up, and the first apps (SystemUI, the keyboard, the phone app, the
 * launcher). A log that starts empty is not a phone's: tools that start a logcat capture wait
 * for its first lines (appium-adb's startLogcat()). pidOf finds each process's pid.
 */
export function bootLog(bootMs: number, pidOf: (name: string) => number): Omit<LogEntry, 'tid'>[] {
  const lines: [string, LogPriority, string, string][] = [
    ['init', 'I', 'init', 'init second stage started!'],
    ['init', 'I', 'init', "starting service 'logd'..."],
    ['init', 'I', 'init', "starting service 'servicemanager'..."],
    ['init', 'I', 'init', "starting service 'surfaceflinger'..."],
    ['init', 'I', 'init', "starting service 'adbd'..."],
    ['init', 'I', 'init', "starting service 'zygote'..."],
    ['zygote64', 'I', 'Zygote', 'Preloading classes...'],
    ['zygote64', 'I', 'Zygote', 'System server process ' + pidOf('system_server') + ' has been created'],
    ['system_server', 'I', 'SystemServer', 'Entered the Android system server!'],
    ['system_server', 'I', 'ActivityManager', 'System now ready'],
    [
      'system_server',
      'I',
      'ActivityManager',
      `Start proc ${pidOf('com.android.systemui')}:com.android.systemui/u0a201 for service {com.android.systemui/com.android.systemui.SystemUIService}`,
    ],
    [
      'system_server',
      'I',
      'ActivityManager',
      `Start proc ${pidOf('com.google.android.inputmethod.latin')}:com.google.android.inputmethod.latin/u0a170 for service {com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME}`,
    ],
    [
      'system_server',
      'I',
      'ActivityManager',
      `Start proc ${pidOf('com.android.phone')}:com.android.phone/1001 for added application com.android.phone`,
    ],
    [
      'system_server',
      'I',
      'ActivityManager',
      `Start proc ${pidOf('com.android.launcher3')}:com.android.launcher3/u0a153 for top-activity {com.android.launcher3/com.android.launcher3.uioverrides.QuickstepLauncher}`,
    ],
    [
      'system_server',
      'I',
      'ActivityTaskManager',
      'Displayed com.android.launcher3/.uioverrides.QuickstepLauncher for user 0: +804ms',
    ],
    ['system_server', 'I', 'ActivityManager', 'Finished processing BOOT_COMPLETED for u0'],
  ];
  return lines.map(([process, priority, tag, message], i) => ({
    // Spread over the second before the phone was ready, in order.
    timeMs: bootMs - (lines.length - i) * 60,
    pid: pidOf(process),
    priority,
    tag,
    message,
  }));
}
