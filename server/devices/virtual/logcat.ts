/** The phone's log buffer: what `logcat` prints and follows. */

export type LogPriority = 'V' | 'D' | 'I' | 'W' | 'E' | 'F';

export interface LogEntry {
  timeMs: number;
  pid: number;
  tid: number;
  priority: LogPriority;
  tag: string;
  message: string;
  /** The writer's uid, as logd records it (logcat's `-v uid`); undefined when unknown. */
  uid?: number;
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

  /** `uidOf` finds the uid of a writing pid, which logd keeps with each entry. */
  constructor(
    private readonly now: () => number = () => Date.now(),
    private readonly uidOf: (pid: number) => number | undefined = () => undefined,
  ) {}

  add(entry: Omit<LogEntry, 'timeMs'> & { timeMs?: number }): void {
    const tag = truncateUtf8(entry.tag, LOG_MAX_PAYLOAD - 3);
    const message = truncateUtf8(entry.message, LOG_MAX_PAYLOAD - 3 - Buffer.byteLength(tag));
    const uid = entry.uid ?? this.uidOf(entry.pid);
    const full: LogEntry = {
      ...entry,
      tag,
      message,
      timeMs: entry.timeMs ?? this.now(),
      ...(uid === undefined ? {} : { uid }),
    };
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

/**
 * An entry's time as logcat prints it (logprint.cpp): `MM-DD hh:mm:ss.mmm` on the phone's
 * clock (UTC), with the year (`year`), as seconds since the epoch (`epoch`) or since boot
 * (`monotonic`, which needs `bootMs`), to the µs or ns (`usec`, `nsec`) and with the zone
 * (`zone`).
 */
function formatLogTime(ms: number, modifiers: ReadonlySet<string> = NO_MODIFIERS, bootMs = 0): string {
  const fraction = (millis: number) => {
    const m = String(Math.floor(millis)).padStart(3, '0');
    return modifiers.has('nsec') ? `${m}000000` : modifiers.has('usec') ? `${m}000` : m;
  };
  let time: string;
  if (modifiers.has('epoch') || modifiers.has('monotonic')) {
    const since = modifiers.has('epoch') ? ms : Math.max(0, ms - bootMs);
    const seconds = String(Math.floor(since / 1000)).padStart(modifiers.has('epoch') ? 5 : 6);
    time = `${seconds}.${fraction(since % 1000)}`;
  } else {
    const d = new Date(ms);
    const day = `${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
    const clock = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
    time = `${modifiers.has('year') ? `${d.getUTCFullYear()}-` : ''}${day} ${clock}.${fraction(d.getUTCMilliseconds())}`;
  }
  return modifiers.has('zone') ? `${time} +0000` : time;
}

const NO_MODIFIERS: ReadonlySet<string> = new Set();

export type LogFormat = 'threadtime' | 'brief' | 'time' | 'tag' | 'process' | 'raw' | 'long';

/** logcat's colours by priority (`-v color`: 256-colour ANSI, as logprint.cpp picks them). */
const COLOURS: Partial<Record<LogPriority, number>> = { D: 75, I: 40, W: 166, E: 196, F: 196 };

/** How logcat prints entries besides the format: its -v modifiers, and when the phone booted (`monotonic`). */
export interface LogStyle {
  modifiers: ReadonlySet<string>;
  bootMs: number;
}

/** Names of uids short enough for logcat's `uid` column (logprint.cpp prints longer ones as numbers). */
const SHORT_UID_NAMES: Record<number, string> = { 0: 'root', 2000: 'shell', 1001: 'radio', 1007: 'log' };

/** liblog's android_LogPriority numbers. */
const PRIORITY_NUMBER: Record<LogPriority, number> = { V: 2, D: 3, I: 4, W: 5, E: 6, F: 7 };
/** sizeof(struct logger_entry) in Android 14's liblog. */
const LOGGER_ENTRY_SIZE = 28;

/**
 * One entry as logd hands it to readers and `logcat -B` writes it: struct logger_entry
 * (payload length, header size, pid, tid, seconds, nanoseconds, log id, uid: little-endian)
 * and the payload: the priority byte, then the tag and the message, each NUL-terminated.
 * The phone's lines are all in main (log id 0); a writer logd could not name is uid 0.
 */
export function binaryLogEntry(e: LogEntry): Buffer {
  const payload = Buffer.concat([
    Buffer.from([PRIORITY_NUMBER[e.priority]]),
    Buffer.from(`${e.tag}\0${e.message}\0`, 'utf8'),
  ]);
  const header = Buffer.alloc(LOGGER_ENTRY_SIZE);
  header.writeUInt16LE(payload.length, 0);
  header.writeUInt16LE(LOGGER_ENTRY_SIZE, 2);
  header.writeInt32LE(e.pid, 4);
  header.writeUInt32LE(e.tid, 8);
  header.writeUInt32LE(Math.floor(e.timeMs / 1000), 12);
  header.writeUInt32LE(Math.floor((e.timeMs % 1000) * 1e6), 16);
  header.writeUInt32LE(0, 20);
  header.writeUInt32LE(e.uid ?? 0, 24);
  return Buffer.concat([header, payload]);
}

/**
 * One entry in logcat's `-v` formats (threadtime is adb logcat's default), with the time
 * modifiers of formatLogTime, `uid` (the uid before the pid) and `color`.
 */
export function formatLogEntry(e: LogEntry, format: LogFormat, style?: LogStyle): string {
  const modifiers = style?.modifiers ?? NO_MODIFIERS;
  let uid = '';
  if (modifiers.has('uid')) {
    uid = e.uid === undefined ? '      ' : `${(SHORT_UID_NAMES[e.uid] ?? String(e.uid)).padStart(5)}:`;
  }
  const line = plainLogEntry(e, format, formatLogTime(e.timeMs, modifiers, style?.bootMs), uid);
  const colour = modifiers.has('color') ? COLOURS[e.priority] : undefined;
  return colour === undefined ? line : `\x1B[38;5;${colour}m${line}\x1B[0m`;
}

function plainLogEntry(e: LogEntry, format: LogFormat, time: string, uid: string): string {
  const pid = `${uid}${String(e.pid).padStart(5)}`;
  switch (format) {
    case 'brief':
      return `${e.priority}/${e.tag.padEnd(8)}(${pid}): ${e.message}`;
    case 'time':
      return `${time} ${e.priority}/${e.tag.padEnd(8)}(${pid}): ${e.message}`;
    case 'tag':
      return `${e.priority}/${e.tag.padEnd(8)}: ${e.message}`;
    case 'process':
      return `${e.priority}(${pid}) ${e.message}  (${e.tag})`;
    case 'raw':
      return e.message;
    case 'long':
      return `[ ${time} ${pid}:${String(e.tid).padStart(5)} ${e.priority}/${e.tag} ]\n${e.message}\n`;
    default:
      return `${time} ${pid} ${String(e.tid).padStart(5)} ${e.priority} ${e.tag.padEnd(8)}: ${e.message}`;
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
      `Start proc ${pidOf('com.android.launcher3')}:com.android.launcher3/u0a153 for top-activity {com.android.launcher3/com.android.launcher3.Launcher}`,
    ],
    [
      'system_server',
      'I',
      'ActivityTaskManager',
      'Displayed com.android.launcher3/.Launcher for user 0: +804ms',
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
