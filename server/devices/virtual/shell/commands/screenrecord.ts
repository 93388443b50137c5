/**
 * `screenrecord`: records the phone's screen to an MP4 file, as Android 14's does (see
 * ../../video/SCREENRECORD.md for the facts this follows: options, messages, exit codes).
 *
 * It is a long-running process on the phone's process table, found and stopped the way
 * tools stop a phone's (`pgrep screenrecord`, `kill -2 PID`, `kill -0 PID` until it is
 * gone): SIGINT or SIGHUP finish the file (its index written) and end it with status 0;
 * SIGTERM, SIGKILL or a second SIGINT end it at once, leaving a file without an index.
 * The file grows on the phone while recording, as the phone's muxer writes it.
 */
import { FsError, type FsView } from '../../fs.js';
import { DEVICE } from '../../identity.js';
import { SIGHUP, SIGINT } from '../../signals.js';
import {
  SCREENRECORD_DEFAULTS,
  startScreenRecording,
  type RecordingOverlay,
  type RecordingSink,
  type ScreenRecording,
  type ScreenSource,
} from '../../video/recorder.js';
import { ScreenScaler } from '../../video/scale.js';
import type { Device } from '../../device.js';
import { resolvePath, type CommandContext, type CommandFn } from '../command.js';
import { BufferOutput } from '../io.js';
import { strftime } from './system.js';

const BIT_RATE_RANGE = [100_000, 200_000_000] as const;
const TIME_LIMIT_MAX = 4_294_967_295;
/** MediaCodec's BAD_VALUE (-EINVAL): what configuring the encoder at a size it cannot do returns. */
const BAD_VALUE = -22;

/** The long options screenrecord's getopt_long knows, and whether each takes a value. */
const LONG_OPTIONS: ReadonlyMap<string, boolean> = new Map([
  ['help', false],
  ['verbose', false],
  ['size', true],
  ['bit-rate', true],
  ['time-limit', true],
  ['bugreport', false],
  ['show-device-info', false],
  ['show-frame-time', false],
  ['rotate', false],
  ['output-format', true],
  ['codec-name', true],
  ['monotonic-time', false],
  ['persistent-surface', false],
  ['bframes', true],
  ['display-id', true],
]);

function usage(bitRate: number, timeLimitS: number): string {
  return `Usage: screenrecord [options] <filename>

Android screenrecord v1.3.  Records the device's display to a .mp4 file.

Options:
--size WIDTHxHEIGHT
    Set the video size, e.g. "1280x720".  Default is the device's main
    display resolution (if supported), 1280x720 if not.  For best results,
    use a size supported by the AVC encoder.
--bit-rate RATE
    Set the video bit rate, in bits per second.  Value may be specified as
    bits or megabits, e.g. '4000000' is equivalent to '4M'.  Default ${Math.floor(bitRate / 1_000_000)}Mbps.
--bugreport
    Add additional information, such as a timestamp overlay, that is helpful
    in videos captured to illustrate bugs.
--time-limit TIME
    Set the maximum recording time, in seconds.  Default is ${timeLimitS}. Set to 0
    to remove the time limit.
--display-id ID
    specify the physical display ID to record. Default is the primary display.
    see "dumpsys SurfaceFlinger --display-id" for valid display IDs.
--verbose
    Display interesting information on stdout.
--help
    Show this message.

Recording continues until Ctrl-C is hit or the time limit is reached.

`;
}

interface Settings {
  verbose: boolean;
  /** The information page first (--bugreport, --show-device-info). */
  infoPage: boolean;
  /** A time stamp on every frame (--bugreport, --show-frame-time). */
  frameTime: boolean;
  size: { width: number; height: number } | null;
  bitRate: number;
  timeLimitS: number;
  file: string;
}

/** Usage errors print their message and end with status 2, as screenrecord's main() does. */
const USAGE_STATUS = 2;

/** The options as screenrecord's getopt_long loop reads them; a number is the exit status. */
function parseOptions(ctx: CommandContext): Settings | number {
  let verbose = false;
  let infoPage = false;
  let frameTime = false;
  let size: Settings['size'] = null;
  let bitRate: number = SCREENRECORD_DEFAULTS.bitRate;
  let timeLimitS: number = SCREENRECORD_DEFAULTS.timeLimitS;
  const operands: string[] = [];
  const err = (message: string): number => {
    ctx.stderr.write(message);
    return USAGE_STATUS;
  };
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      // getopt_long permutes: operands may stand between options.
      operands.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) {
      // No short options at all: getopt names the first letter.
      return err(`screenrecord: invalid option -- '${arg[1]}'\n`);
    }
    const eq = arg.indexOf('=');
    const given = arg.slice(2, eq < 0 ? undefined : eq);
    // getopt_long takes an unambiguous prefix of a long option's name.
    const exact = LONG_OPTIONS.has(given) ? [given] : [];
    const matches = exact.length ? exact : [...LONG_OPTIONS.keys()].filter((name) => name.startsWith(given));
    if (matches.length === 0 || given === '') return err(`screenrecord: unrecognized option '${arg}'\n`);
    if (matches.length > 1) {
      return err(
        `screenrecord: option '${arg}' is ambiguous; possibilities:${matches.map((m) => ` '--${m}'`).join('')}\n`,
      );
    }
    const name = matches[0]!;
    let value: string | undefined;
    if (LONG_OPTIONS.get(name)) {
      value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) return err(`screenrecord: option '--${name}' requires an argument\n`);
    } else if (eq >= 0) {
      return err(`screenrecord: option '--${name}' doesn't allow an argument\n`);
    }
    switch (name) {
      case 'help':
        ctx.stderr.write(usage(bitRate, timeLimitS));
        return 0;
      case 'verbose':
        verbose = true;
        break;
      case 'bugreport':
        infoPage = true;
        frameTime = true;
        break;
      case 'show-device-info':
        infoPage = true;
        break;
      case 'show-frame-time':
        frameTime = true;
        break;
      case 'size': {
        // sscanf("%dx%d"): two numbers around an x, whatever follows.
        const m = /^\s*([+-]?\d+)x\s*([+-]?\d+)/.exec(value!);
        if (!m) return err(`Invalid size '${value}', must be width x height\n`);
        const width = Number(m[1]);
        const height = Number(m[2]);
        if (width === 0 || height === 0) {
          return err(`Invalid size ${width}x${height}, width and height may not be zero\n`);
        }
        size = { width, height };
        break;
      }
      case 'bit-rate': {
        const rate = parseValueWithUnit(value!);
        if (rate === null) return err(`Unrecognized value: ${value}\n`);
        if (rate < BIT_RATE_RANGE[0] || rate > BIT_RATE_RANGE[1]) {
          return err(
            `Bit rate ${rate}bps outside acceptable range [${BIT_RATE_RANGE[0]},${BIT_RATE_RANGE[1]}]\n`,
          );
        }
        bitRate = rate;
        break;
      }
      case 'time-limit': {
        if (!/^\s*[+-]?\d+$/.test(value!)) return err('Error parsing time limit argument\n');
        const limit = Number(value);
        if (limit < 0 || limit > TIME_LIMIT_MAX) {
          return err(`Time limit ${limit}s outside acceptable range [0,${TIME_LIMIT_MAX}] seconds\n`);
        }
        timeLimitS = limit;
        if (verbose) ctx.stdout.write(`Time limit set to ${limit} seconds\n`);
        break;
      }
      case 'display-id':
        if (!/^\s*\d+$/.test(value!) || Number(value) !== 0) {
          return err(
            `screenrecord: the virtual phone has one display, id 0; --display-id ${value} names none (see "dumpsys SurfaceFlinger --display-id")\n`,
          );
        }
        break;
      case 'output-format':
        if (value !== 'mp4') {
          return err(
            `screenrecord: the virtual phone records to mp4 only (--output-format ${value} is not modelled); leave --output-format out\n`,
          );
        }
        break;
      default:
        // The other unofficial options change what is drawn or written in ways the virtual
        // phone does not model: a clear refusal, never a recording without them.
        return err(
          `screenrecord: --${name} is not supported on the virtual phone (what it adds to the video is not modelled); record without it\n`,
        );
    }
  }
  if (operands.length !== 1) return err('Must specify output file (see --help).\n');
  return { verbose, infoPage, frameTime, size, bitRate, timeLimitS, file: operands[0]! };
}

/** strtol and an optional M (megabits), as screenrecord's parseValueWithUnit reads a rate. */
function parseValueWithUnit(text: string): number | null {
  const m = /^\s*([+-]?\d*)([mM]?)$/.exec(text);
  if (!m) return null;
  const value = m[1] === '' || m[1] === '+' || m[1] === '-' ? 0 : Number(m[1]);
  return m[2] ? value * 1_000_000 : value;
}

/**
 * The phone's whole display as a recorder sees it: every visible change, whoever draws it
 * (native screens and Chrome's page frames alike; watching it makes Chrome stream frames).
 * Its size is the display's when recording starts; a display turned since then is fitted
 * into it, black around (screenrecord's updated display projection keeps the video's size).
 */
function displayOf(device: Device): ScreenSource {
  const ui = device.ui;
  const width = ui.width;
  const height = ui.height;
  const sameShape = () => ui.width === width && ui.height === height;
  // Frames are drawn on the encoder's thread when the UI can hand over its drawing of the
  // recording's size; a turned display's frames are fitted here.
  const drawing = ui.displayList?.bind(ui);
  let fitting: ScreenScaler | null = null;
  return {
    width,
    height,
    renderRgba: () => {
      if (sameShape()) return ui.renderRgba();
      if (fitting?.screenWidth !== ui.width || fitting.screenHeight !== ui.height)
        fitting = new ScreenScaler(ui.width, ui.height, width, height);
      return fitting.scale(ui.renderRgba());
    },
    ...(drawing && { displayList: () => (sameShape() ? drawing() : null) }),
    onChange: (listener) => device.onScreenChange(listener),
  };
}

/**
 * The output file on the phone, written as the recording grows (as the muxer writes its
 * fd): samples are appended; the one patch (the media data's size, at the end) rewrites it.
 */
class PhoneFileSink implements RecordingSink {
  private created = false;

  constructor(
    private readonly fs: FsView,
    private readonly path: string,
  ) {}

  async append(bytes: Uint8Array): Promise<void> {
    const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // The first write creates the file (open with O_CREAT|O_TRUNC, mode 0644).
    if (this.created) this.fs.writeFile(this.path, data, { append: true });
    else this.fs.writeFile(this.path, data, { mode: 0o644 });
    this.created = true;
  }

  async patch(position: number, bytes: Uint8Array): Promise<void> {
    const data = Buffer.from(this.fs.readFile(this.path));
    if (position + bytes.length > data.length) throw new RangeError('patch past the end of the file');
    data.set(bytes, position);
    this.fs.writeFile(this.path, data);
  }

  bytes(): Uint8Array {
    return this.fs.readFile(this.path);
  }
}

export const screenrecord: CommandFn = async (ctx) => {
  const settings = parseOptions(ctx);
  if (typeof settings === 'number') return settings;
  const { verbose } = settings;
  const out = (line: string) => {
    if (verbose) ctx.stdout.write(`${line}\n`);
  };
  const display = displayOf(ctx.device);
  // The default size is the display's, each side rounded down to an even number.
  const width = settings.size?.width ?? display.width - (display.width % 2);
  const height = settings.size?.height ?? display.height - (display.height % 2);
  out(
    `Display is ${display.width}x${display.height} @${DEVICE.refreshRate.toFixed(2)}fps (orientation=ROTATION_${(ctx.device.ui.rotation?.() ?? 0) * 90}), layerStack=0`,
  );
  out(`Configuring recorder for ${width}x${height} video/avc at ${(settings.bitRate / 1e6).toFixed(2)}Mbps`);
  // The encoder is configured before the output file is opened: a size it cannot do leaves no file.
  if (!encodableSize(width, height)) {
    ctx.stderr.write(`ERROR: unable to configure video/avc codec at ${width}x${height} (err=${BAD_VALUE})\n`);
    // main() returns recordScreen()'s status_t; the shell sees its low byte.
    return BAD_VALUE & 0xff;
  }
  const path = resolvePath(ctx, settings.file);
  try {
    // Checked now, created once the encoder is configured (screenrecord opens its output after
    // configuring the encoder): a file that exists means the recording runs.
    ctx.fs.checkWritableFile(path);
  } catch (error) {
    if (!(error instanceof FsError)) throw error;
    ctx.stderr.write(`Unable to open '${settings.file}': ${error.reason}\n`);
    return 1;
  }
  // The signal handlers come first, as in screenrecord's recordScreen(): a SIGINT while the
  // encoder starts up stops the recording as soon as it has begun. The first SIGINT or
  // SIGHUP restores the default handlers, so a second one kills the process at once.
  let recording: ScreenRecording | null = null;
  let stopRequested = false;
  const unhandle = ctx.process.handle([SIGINT, SIGHUP], () => {
    unhandle();
    stopRequested = true;
    void recording?.stop().catch(() => undefined);
  });
  // SIGTERM, SIGKILL, a second SIGINT or the phone shutting down: the process dies where it
  // stands, and the file keeps what was written, without its index.
  const onKilled = () => void recording?.abort();
  ctx.signal.addEventListener('abort', onKilled, { once: true });
  try {
    recording = await startScreenRecording(display, {
      size: { width, height },
      bitRate: settings.bitRate,
      timeLimitS: settings.timeLimitS,
      sink: new PhoneFileSink(ctx.fs, path),
      threads: ctx.device.encoderThreads,
      overlay: bugreportOverlay(ctx.device, settings),
    });
    if (ctx.signal.aborted) {
      await recording.abort();
      return 1;
    }
    if (settings.frameTime) out('Bugreport overlay created');
    out(
      `Content area is ${recording.content.width}x${recording.content.height} at offset x=${recording.content.x} y=${recording.content.y}`,
    );
    if (stopRequested) void recording.stop().catch(() => undefined);
    try {
      const result = await recording.finished;
      if (result.endedBy === 'time-limit') out('Time limit reached');
      // Counted from the recording's start, on its own clock, as screenrecord counts.
      const seconds = Math.floor((performance.now() - recording.startedMs) / 1000);
      out(`Encoder stopping; recorded ${result.frames} frames in ${seconds} seconds`);
      out('Stopping encoder and muxer');
    } catch (error) {
      if (ctx.signal.aborted) return 1;
      ctx.stderr.write(
        `ERROR: the recording failed: ${error instanceof FsError ? error.reason : String(error)}\n`,
      );
      return 1;
    }
  } finally {
    unhandle();
    ctx.signal.removeEventListener('abort', onKilled);
  }
  // The media scanner is told about the new file; its output shows with --verbose only.
  const broadcast = `/system/bin/am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file://${path}`;
  out(`Executing: ${broadcast}`);
  // Without --verbose, am's output goes to /dev/null.
  const sink = verbose ? ctx.stdout : new BufferOutput();
  await ctx.runShell(broadcast, { stdin: ctx.stdin, stdout: sink, stderr: sink });
  return 0;
};

/** System properties the information page shows, those that are set (screenrecord's list). */
const INFO_PAGE_PROPERTIES = [
  'ro.build.description',
  'ro.product.manufacturer',
  'ro.product.model',
  'ro.board.platform',
  'ro.revision',
  'dalvik.vm.heapgrowthlimit',
  'dalvik.vm.heapsize',
  'persist.sys.dalvik.vm.lib.2',
];

/**
 * What --bugreport adds (see ../../video/overlay.ts): the information page, as the phone's
 * screenrecord writes it, and a time stamp on each frame in the phone's time (UTC), when the
 * frame was shown, with its number and the frames dropped so far.
 */
function bugreportOverlay(device: Device, settings: Settings): RecordingOverlay {
  const overlay: RecordingOverlay = {};
  if (settings.infoPage) {
    const properties = INFO_PAGE_PROPERTIES.flatMap((name) => {
      const value = device.props.get(name) ?? '';
      return value ? [`${name}: [${value}]`] : [];
    });
    overlay.infoPage = [
      'Android screenrecord v1.3',
      `Started ${strftime('%a, %d %b %Y %T %z', device.now())}`,
      '',
      ...properties,
      '',
      // The virtual phone draws in software: no GPU to name.
      'OpenGL: phonelease / virtual phone (software rendering), OpenGL ES 3.2',
    ];
  }
  if (settings.frameTime) {
    // Frame times are on the recorder's clock; the stamp is the phone's wall time then.
    const startedWall = device.now();
    const startedClock = performance.now();
    overlay.caption = (timeMs, frame, dropped) => {
      const wall = Math.round(startedWall + (timeMs - startedClock));
      const ms = String(wall % 1000).padStart(3, '0');
      return `${strftime('%T', wall)}.${ms} f=${frame} (${dropped})`;
    };
  }
  return overlay;
}

/** What the virtual phone's encoder can configure (see startScreenRecording). */
function encodableSize(width: number, height: number): boolean {
  return (
    width >= 16 && height >= 16 && width <= 4096 && height <= 4096 && width % 2 === 0 && height % 2 === 0
  );
}
