/** Screen tools: wm, input, screencap, uiautomator dump. */
import { FsError } from '../../fs.js';
import {
  forcedDensity,
  forcedSize,
  MAX_DRAWN_DENSITY,
  MIN_DENSITY,
  type Size,
} from '../../display-overrides.js';
import { appiumImeReads } from '../../appium-settings.js';
import { DEVICE } from '../../identity.js';
import { KEYCODE, SYSTEM_LONG_PRESS, repeatsWhenHeld, type PhoneUi } from '../../ui/types.js';
import { userRotation } from '../../settings.js';
import { fail, javaInt, resolvePath } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';

const wm: CommandFn = (ctx) => {
  const args: string[] = [];
  for (let i = 0; i < ctx.args.length; i++) {
    if (ctx.args[i] === '-d') i++;
    else args.push(ctx.args[i]!);
  }
  const [verb, value] = args;
  const sys = ctx.device.system;
  switch (verb) {
    case 'size': {
      if (value === undefined) {
        ctx.stdout.write(`Physical size: ${DEVICE.width}x${DEVICE.height}\n`);
        if (sys.wmSize) ctx.stdout.write(`Override size: ${sys.wmSize.w}x${sys.wmSize.h}\n`);
        return 0;
      }
      const size = value === 'reset' ? null : parseSize(ctx, value, ctx.device.display().density);
      if (size === undefined) return 255;
      ctx.device.forceDisplay({ size: size && forcedSize(size) });
      return 0;
    }
    case 'density': {
      if (value === undefined) {
        ctx.stdout.write(`Physical density: ${DEVICE.density}\n`);
        if (sys.wmDensity !== null) ctx.stdout.write(`Override density: ${sys.wmDensity}\n`);
        return 0;
      }
      let density: number | null = null;
      if (value !== 'reset') {
        density = javaInt(value);
        if (density === null) {
          ctx.stderr.write(`Error: bad number ${numberFormatError(value)}\n`);
          return 255;
        }
        if (density < MIN_DENSITY) {
          ctx.stderr.write(`Error: density must be >= ${MIN_DENSITY}\n`);
          return 255;
        }
        if (density > MAX_DRAWN_DENSITY)
          return fail(
            ctx,
            `density ${density}: not modeled by the virtual phone (it draws at most ${MAX_DRAWN_DENSITY} dpi)`,
            255,
          );
      }
      // The panel's own density clears the override, as the window manager does.
      ctx.device.forceDisplay({ density: density === null ? null : forcedDensity(density) });
      return 0;
    }
    case 'dismiss-keyguard':
      // An insecure lock screen goes; a secure one brings up its bouncer, as on a phone.
      ctx.device.ui.dismissKeyguard?.();
      return 0;
    case 'user-rotation':
      return userRotationCommand(ctx, args.slice(1));
    default:
      if (verb !== undefined && UNMODELED_WM.has(verb))
        return fail(ctx, `${verb}: not modeled by the virtual phone`, 255);
      // ShellCommand's default commands: help (also none, -h) or `Unknown command`, both -1.
      if (verb === undefined || verb === 'help' || verb === '-h') ctx.stdout.write(WM_HELP);
      else ctx.stdout.write(`Unknown command: ${verb}\n`);
      return 255;
  }
};

/** What `"..." + e` prints of Integer.parseInt's NumberFormatException. */
function numberFormatError(text: string): string {
  return `java.lang.NumberFormatException: For input string: "${text}"`;
}

/**
 * `wm size`'s WxH, each in pixels (`px` or nothing) or dp (of `density`, the display's base
 * density: a forced one counts), as the window manager's shell command reads them. A
 * negative side asks for the panel's size, as `reset` does; undefined after the error is
 * written.
 */
function parseSize(ctx: CommandContext, text: string, density: number): Size | null | undefined {
  const x = text.indexOf('x');
  if (x <= 0 || x >= text.length - 1) {
    ctx.stderr.write(`Error: bad size ${text}\n`);
    return undefined;
  }
  const sides = [text.slice(0, x), text.slice(x + 1)].map((side) => {
    const dp = side.endsWith('dp');
    const digits = dp || side.endsWith('px') ? side.slice(0, -2) : side;
    const n = javaInt(digits);
    return n === null ? digits : dp ? Math.trunc((n * density) / 160) : n;
  });
  const bad = sides.find((side) => typeof side === 'string');
  if (bad !== undefined) {
    ctx.stderr.write(`Error: bad number ${numberFormatError(bad)}\n`);
    return undefined;
  }
  const [w, h] = sides as number[];
  return w! >= 0 && h! >= 0 ? { w: w!, h: h! } : null;
}

/** Android 14's other `wm` commands: they say they are not modeled, rather than `Unknown command`. */
const UNMODELED_WM = new Set([
  'fixed-to-user-rotation',
  'scaling',
  'folded-area',
  'disable-blur',
  'dump-visible-window-views',
  'set-ignore-orientation-request',
  'get-ignore-orientation-request',
  'set-sandbox-display-apis',
  'set-multi-window-config',
  'get-multi-window-config',
  'reset-multi-window-config',
  'set-letterbox-style',
  'get-letterbox-style',
  'reset-letterbox-style',
  'tracing',
  'logging',
  'reset',
]);

/** WindowManagerShellCommand's help (Android 14), for the commands the virtual phone has. */
const WM_HELP = `Window manager (window) commands:
  help
      Print this help text.
  size [reset|WxH|WdpxHdp] [-d DISPLAY_ID]
    Return or override display size.
    width and height in pixels unless suffixed with 'dp'.
  density [reset|DENSITY] [-d DISPLAY_ID]
    Return or override display density.
  dismiss-keyguard
    Dismiss the keyguard, prompting user for auth if necessary.
  user-rotation [-d DISPLAY_ID] [free|lock] [rotation]
    Print or set user rotation mode and user rotation.
`;

/**
 * `wm user-rotation [free|lock [ROTATION]]` (WindowManagerShellCommand): no mode prints
 * `free` or `lock N`; `lock` without a rotation locks the one the display has now.
 */
function userRotationCommand(ctx: CommandContext, args: string[]): number {
  const settings = ctx.device.settings;
  const [mode, value] = args;
  if (mode === undefined) {
    // The rotation the window manager keeps, not the setting's text (`settings put` takes any).
    ctx.stdout.write(userRotation.frozen(settings) ? `lock ${userRotation.rotation(settings)}\n` : 'free\n');
    return 0;
  }
  if (mode === 'free') {
    userRotation.thaw(settings);
    return 0;
  }
  if (mode !== 'lock') {
    ctx.stderr.write('Error: argument needs to be either -d, free or lock.\n');
    return 255;
  }
  // Integer.parseInt's NumberFormatException, or the window manager's own check.
  if (value !== undefined && !/^[-+]?\d+$/.test(value)) {
    ctx.stderr.write(`Error: For input string: "${value}"\n`);
    return 255;
  }
  const rotation = value === undefined ? -1 : Number(value);
  if (rotation < -1 || rotation > 3) {
    ctx.stderr.write('Error: Rotation argument must be -1 or a valid rotation constant.\n');
    return 255;
  }
  userRotation.freeze(settings, rotation === -1 ? (ctx.device.ui.rotation?.() ?? 0) : rotation);
  return 0;
}

/**
 * KeyEvent's key codes 0-176 by name (KEYCODE_ dropped), in order: what `input keyevent`
 * and `keycombination` take besides numbers, as KeyEvent.keyCodeFromString does. Digits
 * and letters (7-16, 29-54) are in the list too.
 */
const KEY_NAMES_IN_ORDER = `UNKNOWN SOFT_LEFT SOFT_RIGHT HOME BACK CALL ENDCALL 0 1 2 3 4 5 6 7 8 9 STAR POUND
  DPAD_UP DPAD_DOWN DPAD_LEFT DPAD_RIGHT DPAD_CENTER VOLUME_UP VOLUME_DOWN POWER CAMERA CLEAR
  A B C D E F G H I J K L M N O P Q R S T U V W X Y Z COMMA PERIOD ALT_LEFT ALT_RIGHT SHIFT_LEFT
  SHIFT_RIGHT TAB SPACE SYM EXPLORER ENVELOPE ENTER DEL GRAVE MINUS EQUALS LEFT_BRACKET
  RIGHT_BRACKET BACKSLASH SEMICOLON APOSTROPHE SLASH AT NUM HEADSETHOOK FOCUS PLUS MENU
  NOTIFICATION SEARCH MEDIA_PLAY_PAUSE MEDIA_STOP MEDIA_NEXT MEDIA_PREVIOUS MEDIA_REWIND
  MEDIA_FAST_FORWARD MUTE PAGE_UP PAGE_DOWN PICTSYMBOLS SWITCH_CHARSET BUTTON_A BUTTON_B BUTTON_C
  BUTTON_X BUTTON_Y BUTTON_Z BUTTON_L1 BUTTON_R1 BUTTON_L2 BUTTON_R2 BUTTON_THUMBL BUTTON_THUMBR
  BUTTON_START BUTTON_SELECT BUTTON_MODE ESCAPE FORWARD_DEL CTRL_LEFT CTRL_RIGHT CAPS_LOCK
  SCROLL_LOCK META_LEFT META_RIGHT FUNCTION SYSRQ BREAK MOVE_HOME MOVE_END INSERT FORWARD
  MEDIA_PLAY MEDIA_PAUSE MEDIA_CLOSE MEDIA_EJECT MEDIA_RECORD F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11
  F12 NUM_LOCK NUMPAD_0 NUMPAD_1 NUMPAD_2 NUMPAD_3 NUMPAD_4 NUMPAD_5 NUMPAD_6 NUMPAD_7 NUMPAD_8
  NUMPAD_9 NUMPAD_DIVIDE NUMPAD_MULTIPLY NUMPAD_SUBTRACT NUMPAD_ADD NUMPAD_DOT NUMPAD_COMMA
  NUMPAD_ENTER NUMPAD_EQUALS NUMPAD_LEFT_PAREN NUMPAD_RIGHT_PAREN VOLUME_MUTE INFO CHANNEL_UP
  CHANNEL_DOWN ZOOM_IN ZOOM_OUT TV WINDOW GUIDE DVR BOOKMARK CAPTIONS SETTINGS`.split(/\s+/);

const KEY_NAMES: Record<string, number> = {
  ...Object.fromEntries(KEY_NAMES_IN_ORDER.map((name, code) => [name, code])),
  APP_SWITCH: KEYCODE.APP_SWITCH,
  ASSIST: 219,
  BRIGHTNESS_DOWN: 220,
  BRIGHTNESS_UP: 221,
  SLEEP: 223,
  WAKEUP: KEYCODE.WAKEUP,
  VOICE_ASSIST: 231,
  CUT: 277,
  COPY: 278,
  PASTE: 279,
  ALL_APPS: 284,
};

export function keycodeOf(name: string): number | null {
  if (/^\d+$/.test(name)) return Number(name);
  const key = name.toUpperCase().replace(/^KEYCODE_/, '');
  return KEY_NAMES[key] ?? null;
}

const INPUT_USAGE = `Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The sources are:
      dpad
      keyboard
      mouse
      touchpad
      gamepad
      touchnavigation
      joystick
      touchscreen
      stylus
      trackball

The commands and default sources are:
      text <string> (Default: keyboard)
      keyevent [--longpress|--duration <duration to hold key down in ms>] [--doubletap] [--async] [--delay <duration between keycodes in ms>] <key code number or name> ... (Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      press (Default: trackball)
      roll <dx> <dy> (Default: trackball)
      motionevent <DOWN|UP|MOVE|CANCEL> <x> <y> (Default: touchscreen)
      keycombination [-t duration(ms)] <key code 1> <key code 2> ... (Default: keyboard)
`;

const SOURCES = new Set([
  'dpad',
  'keyboard',
  'mouse',
  'touchpad',
  'gamepad',
  'touchnavigation',
  'joystick',
  'touchscreen',
  'stylus',
  'trackball',
  'rotaryencoder',
]);

/** Whether `args[i]` is the value of the `input keyevent` option before it (`--delay 50`). */
function isOptionValue(args: readonly string[], i: number): boolean {
  return i > 0 && (args[i - 1] === '--duration' || args[i - 1] === '--delay');
}

/** Undoes `input text` escaping: %s is a space. */
export function inputText(raw: string): string {
  return raw.replace(/%s/g, ' ');
}

const input: CommandFn = (ctx) => {
  const args = [...ctx.args];
  if (args[0] && SOURCES.has(args[0])) args.shift();
  if (args[0] === '-d') args.splice(0, 2);
  const verb = args.shift();
  const nums = (n: number): number[] | null => {
    const values = args.slice(0, n).map(Number);
    return values.length === n && values.every((v) => Number.isFinite(v)) ? values : null;
  };
  const ui = ctx.device.ui;
  switch (verb) {
    case 'tap': {
      const v = nums(2);
      if (!v) break;
      ui.tap(v[0]!, v[1]!);
      return 0;
    }
    case 'swipe':
    case 'draganddrop': {
      const v = nums(4);
      if (!v) break;
      const given = args[4] !== undefined ? Number(args[4]) : 300;
      const duration = Number.isFinite(given) ? given : 300;
      if (verb === 'swipe') {
        ui.swipe(v[0]!, v[1]!, v[2]!, v[3]!, duration);
        return 0;
      }
      // A press held for the long-press timeout, then the move (InputShellCommand's sendSwipe
      // with isDragDrop).
      const lifted = ui.drag(v[0]!, v[1]!, v[2]!, v[3]!, duration);
      if (lifted !== null) {
        ctx.stderr.write(
          `input: dragging "${lifted}" is not modeled by the virtual phone (held in place, it is a long press)\n`,
        );
        return 1;
      }
      return 0;
    }
    case 'text': {
      if (args.length === 0) break;
      // Only the first argument is typed (InputShellCommand.runText takes one): `input text
      // hello world` types "hello", so a space is written %s. Its key events reach the
      // input method first: Appium Settings' IMEs read them (appiumImeReads).
      const typed = appiumImeReads(ctx.device.system.currentIme, inputText(args[0]!));
      if (typeof typed === 'number') ui.editorAction(typed);
      else ui.text(typed);
      return 0;
    }
    case 'keyevent': {
      const codes = args.filter((a, i) => !a.startsWith('--') && !isOptionValue(args, i));
      if (codes.length === 0) break;
      const keys: number[] = [];
      for (const c of codes) {
        const code = keycodeOf(c);
        if (code === null) {
          ctx.stderr.write(`Error: Unknown keycode: ${c}\n`);
          return 1;
        }
        keys.push(code);
      }
      // Android 14's InputShellCommand takes its options before the first key, in any order
      // and together. A long press of a key the system gives one to (POWER's menu, HOME's
      // assistant) is not modeled; a key that types, deletes or moves the focus acts on its
      // repeat too, others once. --doubletap sends each key twice.
      const options = args.slice(
        0,
        args.findIndex((a, i) => !a.startsWith('--') && !isOptionValue(args, i)),
      );
      const long = options.includes('--longpress');
      const held = long ? keys.find((k) => SYSTEM_LONG_PRESS.has(k)) : undefined;
      if (held !== undefined) {
        ctx.stderr.write(
          `input: a long press of ${codes[keys.indexOf(held)]} is not modeled by the virtual phone\n`,
        );
        return 1;
      }
      const presses = options.includes('--doubletap') ? 2 : 1;
      for (const code of keys) {
        const times = presses * (long && repeatsWhenHeld(code) ? 2 : 1);
        for (let i = 0; i < times; i++) ui.key(code);
      }
      return 0;
    }
    case 'keycombination': {
      // [-t duration] then two or more keys, held down together.
      const keys = args[0] === '-t' ? args.slice(2) : args;
      if (keys.length === 0 || (args[0] === '-t' && !/^\d+$/.test(args[1] ?? ''))) break;
      const unknown = keys.find((k) => keycodeOf(k) === null);
      if (unknown !== undefined) {
        ctx.stderr.write(`Error: Unknown keycode: ${unknown}\n`);
        return 1;
      }
      if (keys.length < 2) {
        ctx.stderr.write('Error: keycombination requires at least 2 keycodes\n');
        return 1;
      }
      // Keys held together are a chord (CTRL+A, POWER+VOLUME_DOWN), not the keys one by one.
      return fail(
        ctx,
        'keycombination: keys held down together are not modeled by the virtual phone (press them one by one with input keyevent)',
      );
    }
    case 'motionevent': {
      const [action, xs, ys] = args;
      const x = Number(xs);
      const y = Number(ys);
      if (!action || !Number.isFinite(x) || !Number.isFinite(y)) break;
      // A gesture spans several `input motionevent` commands; its start lives on the device.
      const sys = ctx.device.system;
      const start = sys.motionDown;
      const a = action.toUpperCase();
      if (a === 'DOWN') sys.motionDown = { x, y, at: Date.now() };
      else if (a === 'UP' && start) {
        sys.motionDown = null;
        // The time between DOWN and UP is how long the finger was held.
        ui.swipe(start.x, start.y, x, y, Math.max(1, Date.now() - start.at));
      } else if (a === 'CANCEL') sys.motionDown = null;
      return 0;
    }
    case 'press':
      ui.key(KEYCODE.ENTER);
      return 0;
    case 'roll':
      // A trackball's motion moves the focus; the phone has no trackball focus to move.
      ctx.stderr.write(
        'input: roll (a trackball) is not modeled by the virtual phone; use keyevent DPAD_*\n',
      );
      return 1;
  }
  ctx.stderr.write(INPUT_USAGE);
  return 1;
};

/** screencap's raw output: width, height, format (1, RGBA_8888) and colour space (0, unknown), then the pixels. */
function rawScreen(ui: PhoneUi): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt32LE(ui.width, 0);
  header.writeUInt32LE(ui.height, 4);
  header.writeUInt32LE(1, 8);
  header.writeUInt32LE(0, 12);
  return Buffer.concat([header, ui.renderRgba()]);
}

const screencap: CommandFn = async (ctx) => {
  let pngFlag = false;
  let file: string | null = null;
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '-p') pngFlag = true;
    else if (a === '-d') i++;
    else if (a === '-h') {
      ctx.stderr.write(
        'usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save the file as a png.\n   -d: specify the display ID to capture (default: 0)\nIf FILENAME ends with .png it will be saved as a png.\nIf FILENAME is not given, the results will be printed to stdout.\n',
      );
      return 0;
    } else if (a.startsWith('-')) return fail(ctx, `unknown option ${a}`);
    else file = a;
  }
  await ctx.device.browser?.refreshFrame();
  const asPng = pngFlag || (file?.endsWith('.png') ?? false);
  const data = asPng ? ctx.device.ui.renderPng() : rawScreen(ctx.device.ui);
  if (file) {
    try {
      ctx.fs.writeFile(resolvePath(ctx, file), data);
    } catch (error) {
      ctx.stderr.write(
        `Error opening file: ${file} (${error instanceof FsError ? error.reason : String(error)})\n`,
      );
      return 1;
    }
    return 0;
  }
  ctx.stdout.write(data);
  await ctx.stdout.drain();
  return 0;
};

/**
 * What `uiautomator dump` waits for before it reads the screen, as AOSP's DumpCommand does:
 * it connects a new UiAutomation and calls waitForIdle(1000, 10000), so the screen must go
 * a whole second without an accessibility event (counted from the connection, which has
 * seen none yet), for at most ten seconds. That second is why a dump costs at least a
 * second on every phone, and why a screen that never settles cannot be dumped.
 */
export const DUMP_IDLE = { quietMs: 1_000, timeoutMs: 10_000 } as const;

/** Resolves true once the phone's screen has not changed for DUMP_IDLE.quietMs, false at the timeout or an abort. */
function waitForIdle(ctx: Parameters<CommandFn>[0]): Promise<boolean> {
  return new Promise((resolve) => {
    const started = performance.now();
    let quiet: NodeJS.Timeout;
    const finish = (idle: boolean) => {
      clearTimeout(quiet);
      clearTimeout(limit);
      unsubscribe();
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(idle);
    };
    const arm = () => {
      clearTimeout(quiet);
      const left = DUMP_IDLE.timeoutMs - (performance.now() - started);
      if (left >= DUMP_IDLE.quietMs) quiet = setTimeout(() => finish(true), DUMP_IDLE.quietMs);
    };
    const onAbort = () => finish(false);
    const limit = setTimeout(() => finish(false), DUMP_IDLE.timeoutMs);
    const unsubscribe = ctx.device.ui.onChange(arm);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

const uiautomator: CommandFn = async (ctx) => {
  const [verb, ...rest] = ctx.args;
  if (verb === 'dump') {
    const target = rest.filter((a) => !a.startsWith('--'))[0] ?? '/sdcard/window_dump.xml';
    if (!(await waitForIdle(ctx))) {
      // DumpCommand prints this and returns normally: the exit code is 0, and no file is written.
      if (!ctx.signal.aborted) ctx.stderr.write('ERROR: could not get idle state.\n');
      return 0;
    }
    const xml = ctx.device.ui.dumpHierarchy(rest.includes('--compressed'));
    if (target === '/dev/tty' || target === '/dev/stdout') {
      ctx.stdout.write(xml);
    } else {
      try {
        ctx.fs.writeFile(resolvePath(ctx, target), Buffer.from(xml));
      } catch (error) {
        ctx.stderr.write(
          `ERROR: could not write ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
        );
        return 1;
      }
    }
    ctx.stdout.write(`UI hierchary dumped to: ${target}\n`);
    return 0;
  }
  // Following the accessibility events, and UiAutomator 1's test jars, are not modeled:
  // say so rather than end at once as if nothing had happened.
  if (verb === 'events' || verb === 'runtest') {
    ctx.stderr.write(
      verb === 'events'
        ? 'uiautomator events: following accessibility events is not modeled by the virtual phone\n'
        : "uiautomator runtest: UiAutomator 1 test jars are not modeled by the virtual phone (Appium's UiAutomator2 server is)\n",
    );
    return 1;
  }
  ctx.stderr.write(
    'Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n    dump [--verbose][file]\n      [--compressed]: dumps compressed layout information.\n      [file]: the location where the dumped XML should be stored, default is\n      /sdcard/window_dump.xml\n\nevents: prints out accessibility events until terminated\n',
  );
  return verb === 'help' || verb === undefined ? 0 : 1;
};

export const DISPLAY_COMMANDS: Record<string, CommandFn> = { wm, input, screencap, uiautomator };
