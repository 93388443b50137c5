/** `am` (activity manager) and `monkey`: starting apps and services, instrumentation. */
import {
  UIA2_PORT,
  describeIntent,
  notRunnableError,
  parseComponent,
  queryIntent,
  shortComponent,
} from '../../activity.js';
import { runsOnThisPhone } from '../../ui/phone-ui.js';
import type { TaskInfo } from '../../ui/types.js';
import { configuration, displayBounds } from './dumpsys.js';
import {
  FLAG_CLEAR_TASK,
  FLAG_CLEAR_TOP,
  FLAG_SINGLE_TOP,
  type ComponentName,
  type IntentRequest,
} from '../../activity.js';
import { fail, shellException, type CommandContext, type CommandFn } from '../command.js';
import { serveMonkeyNetwork } from './monkey-network.js';
import {
  APPIUM_SETTINGS_PACKAGE,
  appiumSettingsBroadcast,
  appiumSettingsService,
  isForAppiumSettings,
} from '../../appium-settings.js';

/** Intent options that take no argument. */
const NO_ARG = new Set([
  '-W',
  '-S',
  '-D',
  '-N',
  '--grant-read-uri-permission',
  '--grant-write-uri-permission',
  '--grant-persistable-uri-permission',
  '--grant-prefix-uri-permission',
  '--debug-log-resolution',
  '--exclude-stopped-packages',
  '--include-stopped-packages',
  '--activity-brought-to-front',
  '--activity-clear-top',
  '--activity-clear-when-task-reset',
  '--activity-exclude-from-recents',
  '--activity-launched-from-history',
  '--activity-multiple-task',
  '--activity-no-animation',
  '--activity-no-history',
  '--activity-no-user-action',
  '--activity-previous-is-top',
  '--activity-reorder-to-front',
  '--activity-reset-task-if-needed',
  '--activity-single-top',
  '--activity-clear-task',
  '--activity-task-on-home',
  '--activity-match-external',
  '--receiver-registered-only',
  '--receiver-replace-pending',
  '--receiver-foreground',
  '--receiver-no-abort',
  '--receiver-include-background',
  '--selector',
  '--track-allocation',
  '--allow-background-activity-starts',
  '--async',
  '--esn',
]);
/** Extras take a key and a value. */
const EXTRA = new Set([
  '-e',
  '--es',
  '--ez',
  '--ei',
  '--el',
  '--ef',
  '--ed',
  '--eu',
  '--ecn',
  '--eia',
  '--eial',
  '--ela',
  '--elal',
  '--efa',
  '--efal',
  '--esa',
  '--esal',
]);
const ONE_ARG = new Set([
  '--user',
  '--windowingMode',
  '--activityType',
  '--display',
  '--task',
  '--attribution-tag',
  '-t',
  '--receiver-permission',
]);

/** The intent options that set Intent.FLAG_ACTIVITY_* bits (Intent.parseCommandArgs). */
const ACTIVITY_FLAGS: Record<string, number> = {
  '--activity-brought-to-front': 0x400000,
  '--activity-clear-top': FLAG_CLEAR_TOP,
  '--activity-clear-when-task-reset': 0x80000,
  '--activity-exclude-from-recents': 0x800000,
  '--activity-launched-from-history': 0x100000,
  '--activity-multiple-task': 0x8000000,
  '--activity-no-animation': 0x10000,
  '--activity-no-history': 0x40000000,
  '--activity-no-user-action': 0x40000,
  '--activity-previous-is-top': 0x1000000,
  '--activity-reorder-to-front': 0x20000,
  '--activity-reset-task-if-needed': 0x200000,
  '--activity-single-top': FLAG_SINGLE_TOP,
  '--activity-clear-task': FLAG_CLEAR_TASK,
  '--activity-task-on-home': 0x4000,
  '--activity-match-external': 0x800,
};

interface ParsedIntent extends IntentRequest {
  wait: boolean;
  stopFirst: boolean;
  /** The extras by key, as given (`--es KEY VALUE`, `--ez KEY true`, ...). */
  extras: Map<string, string>;
}

/**
 * Why an intent's arguments were refused: what Intent.parseCommandArgs throws (an
 * IllegalArgumentException, which the shell command prints as an exception), or an option
 * the virtual phone does not model.
 */
export interface IntentError {
  message: string;
  notModeled?: true;
}

/** Writes an IntentError as `verb` (am start, pm query-activities ...) fails with it. */
export function refuseIntent(ctx: CommandContext, verb: string, error: IntentError): number {
  if (!error.notModeled) return shellException(ctx, verb, ILLEGAL_ARGUMENT, error.message);
  ctx.stderr.write(`Error: ${error.message}\n`);
  return 255;
}

export function parseIntent(args: string[]): ParsedIntent | IntentError {
  const intent: ParsedIntent = {
    component: null,
    pkg: null,
    action: null,
    categories: [],
    data: null,
    flags: 0,
    wait: false,
    stopFirst: false,
    extras: new Map(),
  };
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-W') intent.wait = true;
    else if (a === '-S') intent.stopFirst = true;
    else if (a === '-a') intent.action = args[++i] ?? null;
    else if (a === '-c') intent.categories.push(args[++i] ?? '');
    else if (a === '-d') intent.data = args[++i] ?? null;
    else if (a === '-p') intent.pkg = args[++i] ?? null;
    else if (a === '-f') intent.flags = Number(args[++i]) || 0;
    else if (a === '-R') {
      // Repeating the launch (a start-up benchmark) is not modeled; once is a plain start.
      const count = Number(args[++i]);
      if (!(count <= 1))
        return {
          message: `-R ${args[i] ?? ''}: repeating the start is not modeled by the virtual phone`,
          notModeled: true,
        };
    } else if (a === '-P' || a === '--start-profiler' || a === '--sampling' || a === '--streaming')
      return { message: `${a}: profiling is not modeled by the virtual phone`, notModeled: true };
    else if (a === '-n') {
      const c = parseComponent(args[++i] ?? '');
      if (!c) return { message: `Bad component name: ${args[i] ?? ''}` };
      intent.component = c;
    } else if (a === '--esn') i++;
    else if (EXTRA.has(a)) {
      intent.extras.set(args[i + 1] ?? '', args[i + 2] ?? '');
      i += 2;
    } else if (ONE_ARG.has(a)) i++;
    else if (ACTIVITY_FLAGS[a] !== undefined) intent.flags |= ACTIVITY_FLAGS[a];
    else if (NO_ARG.has(a) || a.startsWith('--activity-') || a.startsWith('--receiver-')) continue;
    else if (a.startsWith('-')) return { message: `Unknown option: ${a}` };
    else positional.push(a);
  }
  // Intent.parseCommandArgs: the URI argument is a base intent the options fill in: a URI is
  // VIEW of that data, a component or a package its launcher intent (MAIN, LAUNCHER). The
  // base's categories count only when no action was given; the rest fills what is unset.
  for (const p of positional) {
    const c = p.includes('/') && !p.includes(':') ? parseComponent(p) : null;
    const base: Partial<IntentRequest> = p.includes(':')
      ? { action: 'android.intent.action.VIEW', data: p }
      : { action: MAIN, categories: [LAUNCHER], ...(c ? { component: c } : { pkg: p }) };
    if (base.categories && intent.action === null && intent.categories.length === 0)
      intent.categories = [...base.categories];
    intent.action ??= base.action ?? null;
    intent.data ??= base.data ?? null;
    intent.pkg ??= base.pkg ?? null;
    if (base.component) intent.component = base.component;
  }
  return intent;
}

const MAIN = 'android.intent.action.MAIN';
const LAUNCHER = 'android.intent.category.LAUNCHER';

/**
 * `am start` / `start-activity`, as ActivityManagerShellCommand.runStartActivity: with -S the
 * app is force-stopped first (`Stopping: PKG`), `Starting: Intent {...}` is printed on stdout,
 * and what the start answers goes to stdout with -W, else to stderr (`PrintWriter out =
 * mWaitOption ? pw : getErrPrintWriter()`); the status is 0 whatever the start answered.
 */
function amStart(ctx: CommandContext, verb: string, args: string[]): number {
  const intent = parseIntent(args);
  if ('message' in intent) return refuseIntent(ctx, verb, intent);
  const am = ctx.device.activity;
  if (intent.stopFirst) {
    let stopping = intent.component?.pkg;
    if (stopping === undefined) {
      // queryIntentActivities with flags 0: every filter counts, CATEGORY_DEFAULT or not.
      const matches = queryIntent(ctx.device.packages, intent, false);
      if (matches.length !== 1) {
        ctx.stderr.write(
          matches.length === 0
            ? `Error: Intent does not match any activities: ${describeIntent(intent)}\n`
            : `Error: Intent matches multiple activities; can't stop: ${describeIntent(intent)}\n`,
        );
        return 1;
      }
      stopping = matches[0]!.component.pkg;
    }
    ctx.stdout.write(`Stopping: ${stopping}\n`);
    am.forceStop(stopping);
  }
  ctx.stdout.write(`Starting: ${describeIntent(intent)}\n`);
  const result = am.startActivity(intent);
  const out = intent.wait ? ctx.stdout : ctx.stderr;
  if (!result.ok) {
    // An app the phone cannot run, or a start that needs what the phone does not model (the
    // chooser), is refused as a failure (stderr, non-zero), so that scripts and tools stop
    // there instead of waiting for a screen that will never come.
    if (result.notRunnable || result.notModeled) {
      for (const l of result.lines) ctx.stderr.write(`${l}\n`);
      return 255;
    }
    for (const l of result.lines) out.write(`${l}\n`);
    return 0;
  }
  if (result.deliveredToTop) {
    out.write(
      'Warning: Activity not started, intent has been delivered to currently running top-most instance.\n',
    );
  }
  if (intent.wait) {
    ctx.stdout.write(
      result.deliveredToTop
        ? `Status: ok\nLaunchState: UNKNOWN (0)\nActivity: ${shortComponent(result.component)}\nWaitTime: 4\nComplete\n`
        : `Status: ok\nLaunchState: ${result.launchState}\nActivity: ${shortComponent(result.component)}\nTotalTime: ${result.totalMs}\nWaitTime: ${result.totalMs + 3}\nComplete\n`,
    );
  }
  return 0;
}

function amService(ctx: CommandContext, verb: string, args: string[], foreground: boolean): number {
  const intent = parseIntent(args);
  if ('message' in intent) return refuseIntent(ctx, verb, intent);
  const c = intent.component;
  const pkg = c ? ctx.device.packages.get(c.pkg) : undefined;
  if (!c || !pkg || !pkg.services.some((s) => s.name === c.cls)) {
    ctx.stdout.write(`Starting service: ${describeIntent(intent)}\n`);
    ctx.stderr.write('Error: Not found; no service started.\n');
    return 255;
  }
  ctx.stdout.write(`Starting service: ${describeIntent(intent)}\n`);
  if (!runsOnThisPhone(pkg.name)) {
    ctx.stderr.write(`Error: Service not started, ${notRunnableError(pkg)}\n`);
    return 255;
  }
  ctx.device.activity.startService(c, foreground);
  if (c.pkg === APPIUM_SETTINGS_PACKAGE) appiumSettingsService(ctx.device, c.cls, intent.extras);
  return 0;
}

function amStopService(ctx: CommandContext, args: string[]): number {
  const intent = parseIntent(args);
  if ('message' in intent || !intent.component) {
    ctx.stderr.write('Error: no service specified\n');
    return 255;
  }
  ctx.stdout.write(`Stopping service: ${describeIntent(intent)}\n`);
  if (ctx.device.activity.stopService(intent.component)) ctx.stdout.write('Service stopped\n');
  else ctx.stdout.write('Service not stopped: Unable to find service to stop\n');
  return 0;
}

async function amInstrument(ctx: CommandContext, args: string[]): Promise<number> {
  let wait = false;
  let raw = false;
  let component: ComponentName | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-w') wait = true;
    else if (a === '-r') raw = true;
    else if (a === '-e') i += 2;
    else if (a === '-p' || a === '--user' || a === '--abi' || a === '-c') i++;
    else if (a.startsWith('-')) continue;
    else component = parseComponent(a);
  }
  if (!component) {
    ctx.stderr.write('Error: Bad component name\n');
    return 255;
  }
  const started = ctx.device.activity.startInstrumentation(component);
  const name = `ComponentInfo{${component.pkg}/${component.cls}}`;
  switch (started.kind) {
    case 'missing':
      ctx.stdout.write(
        `INSTRUMENTATION_STATUS: Error=Unable to find instrumentation info for: ${name}\nINSTRUMENTATION_STATUS_CODE: -1\n`,
      );
      ctx.stderr.write(
        `android.util.AndroidException: INSTRUMENTATION_FAILED: ${component.pkg}/${component.cls}\n`,
      );
      return 1;
    case 'not-runnable':
      ctx.stdout.write(`INSTRUMENTATION_STATUS: Error=${started.reason}\nINSTRUMENTATION_STATUS_CODE: -1\n`);
      ctx.stderr.write(
        `android.util.AndroidException: INSTRUMENTATION_FAILED: ${component.pkg}/${component.cls}\n`,
      );
      return 1;
    case 'crashed':
      ctx.stdout.write(`INSTRUMENTATION_RESULT: shortMsg=Process crashed.\nINSTRUMENTATION_CODE: 0\n`);
      ctx.device.logcat.add({
        pid: 860,
        tid: 900,
        priority: 'E',
        tag: 'ActivityManager',
        message: `Instrumentation ${name} failed: ${started.reason}`,
      });
      return 0;
    case 'server': {
      if (!wait) return 0;
      ctx.stdout.write(
        `${raw ? 'INSTRUMENTATION_STATUS: class=io.appium.uiautomator2.server.test.AppiumUiAutomator2Server\n' : ''}io.appium.uiautomator2.server.test.AppiumUiAutomator2Server:\n`,
      );
      // The caller holding the stream open is what keeps the server alive (Appium closes it).
      const onAbort = () => started.stop('instrumentation stream closed');
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      try {
        const end = await started.done;
        if (!ctx.signal.aborted) {
          ctx.stdout.write(
            end.completed
              ? `${raw ? 'INSTRUMENTATION_STATUS_CODE: 0\n' : '.\n'}Time: 1.0\n\nOK (1 test)\n\n\nINSTRUMENTATION_CODE: -1\n`
              : `INSTRUMENTATION_RESULT: shortMsg=Process crashed.\nINSTRUMENTATION_CODE: 0\n`,
          );
          ctx.device.log.debug('virtual phone: UiAutomator2 instrumentation ended', {
            reason: end.reason,
            port: UIA2_PORT,
          });
        }
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
      }
      return 0;
    }
  }
}

/**
 * Actions of the framework's <protected-broadcast>s (core/res/AndroidManifest.xml) that test
 * scripts try to send from the shell, to fake a boot, a charger, a new package or a network.
 */
const PROTECTED_BROADCASTS: ReadonlySet<string> = new Set(
  [
    'BOOT_COMPLETED',
    'LOCKED_BOOT_COMPLETED',
    'PRE_BOOT_COMPLETED',
    'ACTION_SHUTDOWN',
    'REBOOT',
    'SCREEN_ON',
    'SCREEN_OFF',
    'USER_PRESENT',
    'TIME_TICK',
    'TIME_SET',
    'DATE_CHANGED',
    'TIMEZONE_CHANGED',
    'LOCALE_CHANGED',
    'CONFIGURATION_CHANGED',
    'BATTERY_CHANGED',
    'BATTERY_LOW',
    'BATTERY_OKAY',
    'ACTION_POWER_CONNECTED',
    'ACTION_POWER_DISCONNECTED',
    'DEVICE_STORAGE_LOW',
    'DEVICE_STORAGE_OK',
    'AIRPLANE_MODE',
    'PACKAGE_ADDED',
    'PACKAGE_REMOVED',
    'PACKAGE_REPLACED',
    'PACKAGE_CHANGED',
    'PACKAGE_RESTARTED',
    'PACKAGE_DATA_CLEARED',
    'PACKAGE_FULLY_REMOVED',
    'MY_PACKAGE_REPLACED',
    'UID_REMOVED',
    'MEDIA_MOUNTED',
    'MEDIA_UNMOUNTED',
  ]
    .map((name) => `android.intent.action.${name}`)
    .concat([
      'android.net.conn.CONNECTIVITY_CHANGE',
      'android.net.wifi.WIFI_STATE_CHANGED',
      'android.net.wifi.STATE_CHANGE',
      'android.provider.Telephony.SMS_RECEIVED',
    ]),
);

function broadcast(ctx: CommandContext, args: string[]): number {
  const intent = parseIntent(args);
  if ('message' in intent) return refuseIntent(ctx, 'broadcast', intent);
  ctx.stdout.write(`Broadcasting: ${describeIntent({ ...intent, flags: intent.flags | 0x400000 })}\n`);
  // Only the system may send what the framework declares a <protected-broadcast>: the
  // shell's broadcast of BOOT_COMPLETED is refused before anything receives it.
  if (intent.action !== null && PROTECTED_BROADCASTS.has(intent.action)) {
    const denial = `Permission Denial: not allowed to send broadcast ${intent.action} from pid=${ctx.process.pid}, uid=2000`;
    ctx.device.logcat.add({ pid: 860, tid: 900, priority: 'W', tag: 'ActivityManager', message: denial });
    return shellException(ctx, 'broadcast', 'java.lang.SecurityException', denial);
  }
  ctx.device.logcat.add({
    pid: 860,
    tid: 900,
    priority: 'D',
    tag: 'ActivityManager',
    message: `Broadcast ${intent.action ?? '(no action)'} from shell`,
  });
  if (
    isForAppiumSettings(intent.component, intent.action) &&
    ctx.device.packages.get(APPIUM_SETTINGS_PACKAGE)
  ) {
    const answer = appiumSettingsBroadcast(ctx.device, intent.action, intent.extras);
    if ('unmodeled' in answer) {
      ctx.stderr.write(
        `am: the virtual phone does not model Appium Settings' receiver for ${answer.unmodeled} (see docs/virtual-phone.md)\n`,
      );
      ctx.stdout.write('Broadcast completed: result=0\n');
      return 0;
    }
    ctx.stdout.write(
      `Broadcast completed: result=${answer.code}${answer.data === undefined ? '' : `, data="${answer.data}"`}\n`,
    );
    return 0;
  }
  ctx.stdout.write('Broadcast completed: result=0\n');
  return 0;
}

const AM_USAGE = `Activity manager (activity) commands:
  help
  start-activity [-D] [-N] [-W] [-P <FILE>] [--start-profiler <FILE>] [-S] [--user <USER_ID> | current] <INTENT>
  start-service [--user <USER_ID> | current] <INTENT>
  start-foreground-service [--user <USER_ID> | current] <INTENT>
  stop-service [--user <USER_ID> | current] <INTENT>
  broadcast [--user <USER_ID> | all | current] <INTENT>
  instrument [-r] [-e <NAME> <VALUE>] [-p <FILE>] [-w] [--user <USER_ID> | current] <COMPONENT>
  force-stop [--user <USER_ID> | all | current] <PACKAGE>
  kill [--user <USER_ID> | all | current] <PACKAGE>
  kill-all
  get-current-user
`;

export const am: CommandFn = async (ctx) => {
  const [verb, ...args] = ctx.args;
  const device = ctx.device;
  const pkgArg = () => args.filter((a, i) => !a.startsWith('-') && args[i - 1] !== '--user')[0];
  switch (verb) {
    case 'start':
    case 'start-activity':
      return amStart(ctx, verb, args);
    case 'startservice':
    case 'start-service':
      return amService(ctx, verb, args, false);
    case 'start-foreground-service':
    case 'startforegroundservice':
      return amService(ctx, verb, args, true);
    case 'stopservice':
    case 'stop-service':
      return amStopService(ctx, args);
    case 'broadcast':
      return broadcast(ctx, args);
    case 'instrument':
      return amInstrument(ctx, args);
    case 'force-stop':
    case 'kill': {
      const name = pkgArg();
      // getNextArgRequired(): the package is required.
      if (!name)
        return shellException(
          ctx,
          verb,
          ILLEGAL_ARGUMENT,
          `Argument expected after "${args.at(-1) ?? verb}"`,
        );
      if (verb === 'force-stop') {
        // [--user <USER_ID> | all | current]; without it, every user (USER_ALL, -1).
        const at = args.indexOf('--user');
        const given = at < 0 ? 'all' : args[at + 1];
        const user = given === 'all' ? -1 : given === 'current' ? 0 : Number(given);
        device.activity.forceStop(name, Number.isInteger(user) ? user : -1);
      } else device.activity.kill(name);
      return 0;
    }
    case 'kill-all':
      device.activity.killBackground();
      return 0;
    case 'get-current-user':
      ctx.stdout.write('0\n');
      return 0;
    case 'set-inactive':
    case 'get-inactive':
    case 'set-standby-bucket':
    case 'get-standby-bucket':
      return appStandby(ctx, verb, args);
    case 'idle-maintenance':
      ctx.stdout.write('Performing idle maintenance...\n');
      return 0;
    case 'send-trim-memory':
      return sendTrimMemory(ctx, args);
    case 'set-debug-app':
      return setDebugApp(ctx, args);
    case 'clear-debug-app':
      // ActivityManagerService.setDebugApp(null, false, true): persistent, so the setting goes too.
      device.activity.setDebugApp(null, true);
      return 0;
    case 'set-stop-user-on-switch':
      // There is no other user to switch to: nothing to change.
      return 0;
    case 'stack':
    case 'task':
      return amStackOrTask(ctx, verb, args);
    case undefined:
    case 'help':
      ctx.stdout.write(AM_USAGE);
      return 0;
    default:
      // Android 14's am has these; the virtual phone says it does not model them.
      if (UNMODELED_AM.has(verb)) return fail(ctx, `${verb}: not modeled by the virtual phone`, 255);
      ctx.stderr.write(`Unknown command: ${verb}\n`);
      return 255;
  }
};

/**
 * The sub-commands of `am stack` and `am task` in Android 14's ActivityManagerShellCommand
 * (runStack, runTask). `am task` has no `list`: root tasks are listed by `am stack list`.
 */
const STACK_COMMANDS: Record<'stack' | 'task', readonly string[]> = {
  stack: ['move-task', 'list', 'info', 'remove'],
  task: ['lock', 'resizeable', 'resize', 'focus'],
};

/** `am stack ...` and `am task ...`: only `am stack list` is modeled. */
function amStackOrTask(ctx: CommandContext, verb: 'stack' | 'task', args: string[]): number {
  const op = args[0];
  // getNextArgRequired(): the sub-command is required.
  if (op === undefined)
    return shellException(ctx, verb, ILLEGAL_ARGUMENT, `Argument expected after "${verb}"`);
  if (!STACK_COMMANDS[verb].includes(op)) {
    ctx.stderr.write(`Error: unknown command '${op}'\n`);
    return 255;
  }
  if (verb === 'task' || op !== 'list')
    return fail(ctx, `${verb} ${op}: not modeled by the virtual phone`, 255);
  ctx.stdout.write(rootTaskList(ctx));
  return 0;
}

/**
 * `am stack list`: ActivityTaskManager.getAllRootTaskInfos(), the display's root tasks top
 * to bottom, each printed by RootTaskInfo.toString() (and println, hence the blank line after
 * each): the root task, its configuration, then each leaf task in it with the full name of the
 * activity that started it and the component on top. The ids are the tasks' own, the ones
 * `dumpsys activity` shows; the launcher's task sits in the home root task.
 */
function rootTaskList(ctx: CommandContext): string {
  const tasks = ctx.device.ui.taskList();
  const { w, h } = displayBounds(ctx);
  const bounds = `[0,0][${w},${h}]`;
  const roots = new Map<number, TaskInfo[]>();
  for (const t of tasks.stack) roots.set(t.rootId, [...(roots.get(t.rootId) ?? []), t]);
  let out = '';
  for (const [rootId, leaves] of roots) {
    const visible = leaves.some((t) => t.visible);
    out += `RootTask id=${rootId} bounds=${bounds} displayId=0 userId=0\n configuration=${configuration(ctx, leaves[0]!.type)}\n`;
    for (const t of leaves) {
      const base = t.activities[0]!.activity;
      const top = t.activities.at(-1)!.activity;
      out += `  taskId=${t.id}: ${t.package}/${base} bounds=${bounds} userId=0 visible=${visible} topActivity=ComponentInfo{${t.package}/${top}}\n`;
    }
    out += '\n';
  }
  return out;
}

/**
 * `am set-debug-app [-w] [--persistent] PACKAGE` (runSetDebugApp): the app to debug. Chrome
 * reads its command-line file from /data/local/tmp when it is the debug app. Waiting for a
 * debugger (-w) is not modeled: no debugger can attach to the virtual phone's apps.
 */
function setDebugApp(ctx: CommandContext, args: string[]): number {
  let persistent = false;
  let i = 0;
  for (; i < args.length && args[i]!.startsWith('-'); i++) {
    const opt = args[i]!;
    if (opt === '--persistent') persistent = true;
    else if (opt === '-w')
      return fail(ctx, 'set-debug-app -w: waiting for a debugger is not modeled by the virtual phone', 255);
    else {
      ctx.stderr.write(`Error: Unknown option: ${opt}\n`);
      return 255;
    }
  }
  const pkg = args[i];
  if (pkg === undefined)
    return shellException(
      ctx,
      'set-debug-app',
      ILLEGAL_ARGUMENT,
      `Argument expected after "${args.at(-1) ?? 'set-debug-app'}"`,
    );
  ctx.device.activity.setDebugApp(pkg, persistent);
  return 0;
}

/** Android 14's other am commands (debugging, profiling, users, displays). */
const UNMODELED_AM = new Set([
  'attach-agent',
  'bug-report',
  'clear-exit-info',
  'clear-watch-heap',
  'compat',
  'crash',
  'display',
  'dumpheap',
  'fgs-notification-rate-limit',
  'get-config',
  'get-isolated-pids',
  'get-started-user-state',
  'get-uid-state',
  'hang',
  'make-uid-idle',
  'memory-factor',
  'monitor',
  'no-home-screen',
  'package-importance',
  'profile',
  'restart',
  'screen-compat',
  'service-restart-backoff',
  'set-watch-heap',
  'start-user',
  'stop-app',
  'stop-user',
  'supports-multiwindow',
  'supports-split-screen-multi-window',
  'switch-user',
  'to-app-uri',
  'to-intent-uri',
  'to-uri',
  'trace-ipc',
  'unlock-user',
  'update-appinfo',
  'wait-for-broadcast-idle',
  'watch-uids',
  'write',
]);

const ILLEGAL_ARGUMENT = 'java.lang.IllegalArgumentException';

/** The arguments without `--user U`: the virtual phone has one user. */
function withoutUser(args: string[]): string[] {
  return args.filter((a, i) => a !== '--user' && args[i - 1] !== '--user');
}

/** The levels `am send-trim-memory` names (ComponentCallbacks2.TRIM_MEMORY_*). */
const TRIM_LEVELS = new Set([
  'HIDDEN',
  'RUNNING_MODERATE',
  'BACKGROUND',
  'RUNNING_LOW',
  'MODERATE',
  'RUNNING_CRITICAL',
  'COMPLETE',
]);

/**
 * `am send-trim-memory [--user U] PROCESS LEVEL`: the app's process is told to trim its
 * memory (nothing to trim on the virtual phone), once the level and the process are checked
 * as ActivityManagerShellCommand and setProcessMemoryTrimLevel check them.
 */
function sendTrimMemory(ctx: CommandContext, rawArgs: string[]): number {
  const [process, level] = withoutUser(rawArgs);
  if (process === undefined || level === undefined) {
    ctx.stderr.write('Error: send-trim-memory needs a process and a level\n');
    return 255;
  }
  if (!TRIM_LEVELS.has(level) && !/^\d+$/.test(level)) {
    ctx.stderr.write(`Error: Unknown level option: ${level}\n`);
    return 255;
  }
  if (!ctx.device.processes.isRunning(process))
    return shellException(ctx, 'send-trim-memory', ILLEGAL_ARGUMENT, `Unknown process: ${process}`);
  return 0;
}

/** UsageStatsManager's standby buckets, as `am set-standby-bucket` names them. */
const STANDBY_BUCKETS: Record<string, number> = {
  active: 10,
  working_set: 20,
  frequent: 30,
  rare: 40,
  restricted: 45,
};
/** STANDBY_BUCKET_EXEMPTED: system apps are never put in standby. */
const BUCKET_EXEMPTED = 5;

/**
 * App standby as AppStandbyController keeps it: `set-inactive` puts an app in the rare bucket
 * (idle) or the active one, `set-standby-bucket` in any; an app is idle from the rare bucket
 * on, unless the idle whitelist or the system exempts it. Apps start active; system apps are
 * exempted.
 */
function appStandby(ctx: CommandContext, verb: string, rawArgs: string[]): number {
  const device = ctx.device;
  const args = withoutUser(rawArgs);
  const bucketOf = (name: string): number =>
    device.system.standbyBuckets.get(name) ??
    (device.packages.get(name)?.system === false ? STANDBY_BUCKETS.active! : BUCKET_EXEMPTED);
  const exception = (message: string): number => shellException(ctx, verb, ILLEGAL_ARGUMENT, message);
  const [name, value] = args;
  if (verb === 'get-standby-bucket' && name === undefined) {
    for (const p of device.packages.all()) ctx.stdout.write(`${p.name}: ${bucketOf(p.name)}\n`);
    return 0;
  }
  if (name === undefined || (verb.startsWith('set-') && value === undefined)) {
    ctx.stderr.write(
      `Error: ${verb} needs ${verb.startsWith('set-') ? 'a package and a value' : 'a package'}\n`,
    );
    return 255;
  }
  const installed = device.packages.get(name) !== undefined;
  switch (verb) {
    case 'set-inactive':
      if (installed)
        device.system.standbyBuckets.set(
          name,
          value === 'true' ? STANDBY_BUCKETS.rare! : STANDBY_BUCKETS.active!,
        );
      return 0;
    case 'get-inactive': {
      const idle =
        installed && bucketOf(name) >= STANDBY_BUCKETS.rare! && !device.system.idleWhitelist.has(name);
      ctx.stdout.write(`Idle=${idle}\n`);
      return 0;
    }
    case 'set-standby-bucket': {
      const bucket = STANDBY_BUCKETS[value!] ?? (/^\d+$/.test(value!) ? Number(value) : -1);
      if (!Object.values(STANDBY_BUCKETS).includes(bucket))
        return exception(`Cannot set the standby bucket to ${bucket}`);
      if (!installed) return exception(`Cannot set standby bucket for non existent package (${name})`);
      device.system.standbyBuckets.set(name, bucket);
      return 0;
    }
    default:
      if (!installed) return exception(`Cannot get standby bucket for non existent package (${name})`);
      ctx.stdout.write(`${bucketOf(name)}\n`);
      return 0;
  }
}

export const monkey: CommandFn = async (ctx) => {
  let pkg: string | null = null;
  const categories: string[] = [];
  let count = 0;
  let port: number | null = null;
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '-p') pkg = ctx.args[++i] ?? null;
    else if (a === '--port') {
      // nextOptionLong: a number is required.
      const value = ctx.args[++i];
      port = value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
    } else if (a === '-c') categories.push(ctx.args[++i] ?? '');
    else if (a === '-s' || a === '--throttle' || a.startsWith('--pct-')) i++;
    else if (/^\d+$/.test(a)) count = Number(a);
  }
  ctx.stdout.write(
    `  bash arg: ${ctx.args.join('\n  bash arg: ')}\nargs: [${ctx.args.join(', ')}]\n${ctx.args.map((a) => ` arg: "${a}"`).join('\n')}\n`,
  );
  if (port !== null) return monkeyServer(ctx, port, pkg);
  const record = pkg ? ctx.device.packages.get(pkg) : undefined;
  if (
    !record?.launcherActivity ||
    (categories.length > 0 && !categories.includes('android.intent.category.LAUNCHER'))
  ) {
    ctx.stdout.write('** No activities found to run, monkey aborted.\n');
    return 252;
  }
  ctx.stdout.write(`data="${record.name}"\n${categories.map((c) => `data="${c}"`).join('\n')}\n`);
  // One event is the app's launch (how Appium and scripts start an app); the random touches,
  // keys and switches of a longer run are not modeled, and are not claimed as injected.
  if (count > 1) {
    ctx.stderr.write(
      `monkey: ${count} random events are not modeled by the virtual phone; 1 launches the app\n`,
    );
    return 1;
  }
  if (count > 0) {
    const started = ctx.device.activity.startActivity({
      component: { pkg: record.name, cls: record.launcherActivity },
      pkg: record.name,
      action: 'android.intent.action.MAIN',
      categories: ['android.intent.category.LAUNCHER'],
      data: null,
      flags: 0x10200000,
    });
    if (!started.ok && started.notRunnable) {
      ctx.stderr.write(`** Error: ${notRunnableError(record)}\n** Monkey aborted due to error.\n`);
      return 255;
    }
  }
  ctx.stdout.write(monkeyFinished(count));
  return 0;
};

function monkeyFinished(events: number): string {
  return `Events injected: ${events}\n## Network stats: elapsed time=18ms (0ms mobile, 0ms wifi, 18ms not connected)\n`;
}

/**
 * `monkey --port N` (a server port instead of a count): Monkey's network script server until
 * a client sends `quit` (monkey-network.ts). The apps it may drive are -p's, or every app
 * with a launcher activity.
 */
async function monkeyServer(ctx: CommandContext, port: number, pkg: string | null): Promise<number> {
  if (!Number.isInteger(port)) {
    ctx.stderr.write('** Error: Server port to listen on for commands is not a number\n');
    return 255;
  }
  if (pkg !== null && !ctx.device.packages.get(pkg)?.launcherActivity) {
    ctx.stdout.write('** No activities found to run, monkey aborted.\n');
    return 252;
  }
  const events = port <= 65535 ? await serveMonkeyNetwork(ctx, port) : null;
  if (events === null) {
    ctx.stdout.write('Error binding to network socket.\n');
    return 251;
  }
  ctx.stdout.write(monkeyFinished(events));
  return 0;
}
