/** `cmd SERVICE ...` (and `abb`): routes to the service tools, plus appops and notification. */
import { parseComponent } from '../../activity.js';
import { appOp } from '../../app-ops.js';
import { shellException } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { airplaneMode, locationSwitch, wifiSwitch } from '../../settings.js';
import { isPublished, publishedServices } from '../../system-services.js';

export const appops: CommandFn = (ctx) => {
  const args = ctx.args.filter((a, i) => a !== '--uid' && a !== '--user' && ctx.args[i - 1] !== '--user');
  const [verb, pkgName, opText, mode] = args;
  const ops = ctx.device.system.appOps;
  const refused = (message: string) => {
    ctx.stderr.write(`Error: ${message}\n`);
    return 255;
  };
  // AppOpsService's shell reads the op first, then finds the package's uid; an op code past
  // the table fails only once the mode is set or read (`used`). Null for an op it takes.
  const lookup = opText === undefined ? undefined : appOp(opText);
  const opFailure = (used: boolean): number | null => {
    if (!lookup || 'name' in lookup) return null;
    if (lookup.refused !== 'outOfRange')
      return lookup.refused === 'unknown' ? refused(`Unknown operation string: ${opText}`) : 255;
    return used
      ? shellException(ctx, verb!, 'java.lang.IllegalArgumentException', `Bad operation #${lookup.code}`)
      : null;
  };
  const op = lookup && 'name' in lookup ? lookup.name : undefined;
  switch (verb) {
    case 'set': {
      if (!pkgName || !opText || !mode) break;
      const early = opFailure(false);
      if (early !== null) return early;
      if (!ctx.device.packages.get(pkgName)) return refused(`No UID for ${pkgName} in user 0`);
      if (!['allow', 'deny', 'ignore', 'default', 'foreground', 'errored'].includes(mode))
        return refused(`Mode ${mode} is not valid`);
      const late = opFailure(true);
      if (late !== null) return late;
      const map = ops.get(pkgName) ?? new Map<string, string>();
      map.set(op!, mode);
      ops.set(pkgName, map);
      return 0;
    }
    case 'get': {
      if (!pkgName) break;
      const early = opFailure(false);
      if (early !== null) return early;
      if (!ctx.device.packages.get(pkgName)) return refused(`No UID for ${pkgName} in user 0`);
      const late = opFailure(true);
      if (late !== null) return late;
      const map = ops.get(pkgName);
      const entries = [...(map ?? new Map<string, string>())].filter(([k]) => op === undefined || k === op);
      if (entries.length === 0) {
        ctx.stdout.write(op !== undefined ? `${op}: default\n` : 'No operations.\n');
        return 0;
      }
      for (const [k, v] of entries) ctx.stdout.write(`${k}: ${v}\n`);
      return 0;
    }
    case 'reset':
      if (pkgName) ops.delete(pkgName);
      else ops.clear();
      return 0;
  }
  ctx.stderr.write(
    'AppOps service (appops) commands:\n  help\n  start, stop, set, get, query-op, reset, write-settings, read-settings\n',
  );
  return verb === undefined || verb === 'help' ? 0 : 255;
};

function notification(ctx: CommandContext, args: string[]): number {
  const [verb, component] = args;
  const listeners = ctx.device.system.notificationListeners;
  switch (verb) {
    case 'allow_listener':
    case 'disallow_listener': {
      const c = component ? parseComponent(component) : null;
      if (!c) {
        ctx.stderr.write(`Invalid listener - must be a ComponentName\n`);
        return 255;
      }
      const key = `${c.pkg}/${c.cls}`;
      if (verb === 'allow_listener') listeners.add(key);
      else listeners.delete(key);
      return 0;
    }
    case 'allow_assistant':
    case 'disallow_assistant':
    case 'allow_dnd':
    case 'disallow_dnd':
    case 'post':
    case 'snooze':
    case 'unsnooze':
      // Posting would be a silent success: the phone has no notifications to show or list,
      // and no Do Not Disturb or assistant access to grant.
      return notModeled(ctx, 'notification', args);
    default:
      ctx.stdout.write(
        'usage: cmd notification SUBCMD [args]\n\nSUBCMDs:\n  allow_listener COMPONENT [user_id (current user if not specified)]\n  disallow_listener COMPONENT [user_id (current user if not specified)]\n  allow_assistant COMPONENT [user_id (current user if not specified)]\n  allow_dnd PACKAGE [user_id (current user if not specified)]\n  post [--help | flags] TAG TEXT\n',
      );
      return verb === undefined || verb === 'help' ? 0 : 255;
  }
}

/** A subcommand the phone does not model: a clear error, never a silent success. */
function notModeled(ctx: CommandContext, service: string, args: string[]): number {
  ctx.stderr.write(
    `cmd: the virtual phone does not model 'cmd ${[service, ...args].join(' ')}' (see docs/virtual-phone.md)\n`,
  );
  return 255;
}

type ServiceCommand = (ctx: CommandContext, args: string[]) => number | Promise<number>;

/**
 * The shell commands of the services the phone models. A service of the phone without an
 * entry here, or a subcommand a handler does not know, answers notModeled.
 */
function serviceCommands(table: () => ReadonlyMap<string, CommandFn>): Record<string, ServiceCommand> {
  const delegate =
    (tool: string, prefix: string[] = []): ServiceCommand =>
    (ctx, args) => {
      const fn = table().get(tool);
      return fn ? fn({ ...ctx, name: tool, args: [...prefix, ...args] }) : notModeled(ctx, tool, args);
    };
  return {
    package: delegate('pm'),
    activity: delegate('am'),
    appops: delegate('appops'),
    settings: delegate('settings'),
    window: delegate('wm'),
    input: delegate('input'),
    input_method: delegate('ime'),
    lock_settings: delegate('locksettings'),
    deviceidle: delegate('dumpsys', ['deviceidle']),
    notification,
    battery: (ctx, args) => {
      const r = ctx.device.battery.command(args);
      ctx.stdout.write(r.out);
      ctx.stderr.write(r.err);
      return r.status & 0xff;
    },
    wifi: (ctx, args) => {
      if (args[0] === 'status') {
        // The Wi-Fi service's state is its setting, however it changed (svc, cmd, the Settings app).
        ctx.stdout.write(`Wifi is ${wifiSwitch.on(ctx.device.settings) ? 'enabled' : 'disabled'}\n`);
        return 0;
      }
      if (args[0] === 'set-wifi-enabled' && (args[1] === 'enabled' || args[1] === 'disabled')) {
        ctx.device.setWifi(args[1] === 'enabled');
        return 0;
      }
      return notModeled(ctx, 'wifi', args);
    },
    phone: (ctx, args) => {
      // Mobile data on and off (appium-adb's setDataState on a phone); nothing else of telephony.
      if (args.length === 2 && args[0] === 'data' && (args[1] === 'enable' || args[1] === 'disable')) {
        ctx.device.setMobileData(args[1] === 'enable');
        return 0;
      }
      return notModeled(ctx, 'phone', args);
    },
    bluetooth_manager: (ctx, args) => {
      // Bluetooth on and off (what Appium's mobile: bluetooth does); the phone has no radio
      // to pair anything with.
      if (args.length === 1 && (args[0] === 'enable' || args[0] === 'disable')) {
        ctx.device.settings.put('global', 'bluetooth_on', args[0] === 'enable' ? '1' : '0');
        return 0;
      }
      return notModeled(ctx, 'bluetooth_manager', args);
    },
    connectivity: (ctx, args) => {
      const settings = ctx.device.settings;
      if (args[0] !== 'airplane-mode') return notModeled(ctx, 'connectivity', args);
      if (args[1] === undefined) ctx.stdout.write(`${airplaneMode.on(settings) ? 'enabled' : 'disabled'}\n`);
      else if (args[1] === 'enable' || args[1] === 'disable')
        airplaneMode.set(settings, args[1] === 'enable');
      else return notModeled(ctx, 'connectivity', args);
      return 0;
    },
    location: (ctx, args) => {
      const settings = ctx.device.settings;
      if (args[0] === 'is-location-enabled') ctx.stdout.write(`${locationSwitch.on(settings)}\n`);
      else if (args[0] === 'set-location-enabled' && (args[1] === 'true' || args[1] === 'false'))
        locationSwitch.set(settings, args[1] === 'true');
      else return notModeled(ctx, 'location', args);
      return 0;
    },
    uimode: (ctx, args) => {
      if (args[0] !== 'night') return notModeled(ctx, 'uimode', args);
      // UiModeManager keeps the mode in secure ui_night_mode: 0 auto, 1 no, 2 yes.
      const names = ['auto', 'no', 'yes'];
      if (args[1] !== undefined) {
        const mode = names.indexOf(args[1]);
        if (mode < 0) {
          ctx.stderr.write(`Error: mode must be 'yes', 'no', or 'auto'\n`);
          return 255;
        }
        ctx.device.settings.put('secure', 'ui_night_mode', String(mode));
      }
      const current = names[Number(ctx.device.settings.get('secure', 'ui_night_mode') ?? '1')] ?? 'no';
      ctx.stdout.write(`Night mode: ${current}\n`);
      return 0;
    },
    statusbar: (ctx, args) => {
      // The phone draws no notification shade: collapsing it is a no-op, opening it is not
      // modeled (it would be a silent success).
      if (args.length === 1 && args[0] === 'collapse') return 0;
      return notModeled(ctx, 'statusbar', args);
    },
  };
}

const NO_SERVICE =
  'cmd: No service specified; use -l to list all running services. Use -w to start and wait for a service.\n';

/**
 * `cmd` as Android 14's frameworks/native/cmds/cmd: no arguments is an error (status 20),
 * `-l` alone lists the running services, `-w` (with a service) waits for it, an unknown
 * service is "Can't find service" (status 20); otherwise the service's shell command runs
 * and its status is cmd's.
 */
export function makeCmd(table: () => ReadonlyMap<string, CommandFn>): CommandFn {
  const services = serviceCommands(table);
  return async (ctx) => {
    const args = [...ctx.args];
    if (args.length === 0) {
      ctx.stderr.write(NO_SERVICE);
      return 20;
    }
    if (args.length === 1 && args[0] === '-l') {
      const names = publishedServices(ctx.device.system).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      ctx.stdout.write(`Currently running services:\n${names.map((s) => `  ${s}\n`).join('')}`);
      return 0;
    }
    if (args.length > 1 && args[0] === '-w') args.shift();
    const [service, ...rest] = args as [string, ...string[]];
    if (!isPublished(ctx.device.system, service)) {
      ctx.stderr.write(`cmd: Can't find service: ${service}\n`);
      return 20;
    }
    const handler = services[service];
    return handler ? handler(ctx, rest) : notModeled(ctx, service, rest);
  };
}
