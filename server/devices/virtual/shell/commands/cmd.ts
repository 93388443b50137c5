/** `cmd SERVICE ...` (and `abb`): routes to the service tools, plus appops and notification. */
import { parseComponent } from '../../activity.js';
import type { CommandContext, CommandFn } from '../command.js';

function opName(op: string): string {
  return op.replace(/^android:/, '').toUpperCase();
}

export const appops: CommandFn = (ctx) => {
  const args = ctx.args.filter((a, i) => a !== '--uid' && a !== '--user' && ctx.args[i - 1] !== '--user');
  const [verb, pkgName, op, mode] = args;
  const ops = ctx.device.system.appOps;
  switch (verb) {
    case 'set': {
      if (!pkgName || !op || !mode) break;
      if (!ctx.device.packages.get(pkgName)) {
        ctx.stderr.write(`Error: No UID for ${pkgName} in user 0\n`);
        return 255;
      }
      if (!['allow', 'deny', 'ignore', 'default', 'foreground', 'errored'].includes(mode)) {
        ctx.stderr.write(`Error: Mode ${mode} is not valid\n`);
        return 255;
      }
      const map = ops.get(pkgName) ?? new Map<string, string>();
      map.set(opName(op), mode);
      ops.set(pkgName, map);
      return 0;
    }
    case 'get': {
      if (!pkgName) break;
      if (!ctx.device.packages.get(pkgName)) {
        ctx.stderr.write(`Error: No UID for ${pkgName} in user 0\n`);
        return 255;
      }
      const map = ops.get(pkgName);
      const entries = [...(map ?? new Map<string, string>())].filter(([k]) => !op || k === opName(op));
      if (entries.length === 0) {
        ctx.stdout.write(op ? `${opName(op)}: default\n` : 'No operations.\n');
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
      return 0;
    default:
      ctx.stdout.write(
        'usage: cmd notification SUBCMD [args]\n\nSUBCMDs:\n  allow_listener COMPONENT [user_id (current user if not specified)]\n  disallow_listener COMPONENT [user_id (current user if not specified)]\n  allow_assistant COMPONENT [user_id (current user if not specified)]\n  allow_dnd PACKAGE [user_id (current user if not specified)]\n  post [--help | flags] TAG TEXT\n',
      );
      return verb === undefined || verb === 'help' ? 0 : 255;
  }
}

const SERVICES = [
  'activity',
  'appops',
  'bluetooth_manager',
  'clipboard',
  'connectivity',
  'deviceidle',
  'input',
  'input_method',
  'location',
  'notification',
  'package',
  'phone',
  'power',
  'settings',
  'statusbar',
  'uimode',
  'wifi',
  'window',
];

export function makeCmd(table: () => ReadonlyMap<string, CommandFn>): CommandFn {
  const delegate = (ctx: CommandContext, name: string, args: string[]) => {
    const fn = table().get(name);
    if (!fn) return 20;
    return fn({ ...ctx, name, args });
  };
  return async (ctx) => {
    const args = [...ctx.args];
    while (args[0] === '-w') args.shift();
    const [service, ...rest] = args;
    const sys = ctx.device.system;
    switch (service) {
      case undefined:
      case '-l':
        ctx.stdout.write(`Currently running services:\n${SERVICES.map((s) => `  ${s}\n`).join('')}`);
        return 0;
      case 'package':
        return delegate(ctx, 'pm', rest);
      case 'activity':
        return delegate(ctx, 'am', rest);
      case 'appops':
        return delegate(ctx, 'appops', rest);
      case 'settings':
        return delegate(ctx, 'settings', rest);
      case 'window':
        return delegate(ctx, 'wm', rest);
      case 'input':
        return delegate(ctx, 'input', rest);
      case 'input_method':
        return delegate(ctx, 'ime', rest);
      case 'notification':
        return notification(ctx, rest);
      case 'deviceidle':
        return delegate(ctx, 'dumpsys', ['deviceidle', ...rest]);
      case 'statusbar':
      case 'power':
      case 'clipboard':
      case 'phone':
      case 'bluetooth_manager':
        if (service === 'phone' && rest[0] === 'data') sys.data = rest[1] === 'enable';
        return 0;
      case 'wifi':
        if (rest[0] === 'status') {
          ctx.stdout.write(`Wifi is ${sys.wifi ? 'enabled' : 'disabled'}\n`);
          return 0;
        }
        if (rest[0] === 'set-wifi-enabled') sys.wifi = rest[1] === 'enabled';
        return 0;
      case 'connectivity':
        if (rest[0] === 'airplane-mode') {
          if (rest[1] === undefined) ctx.stdout.write(`${sys.airplaneMode ? 'enabled' : 'disabled'}\n`);
          else {
            sys.airplaneMode = rest[1] === 'enable';
            ctx.device.settings.put('global', 'airplane_mode_on', sys.airplaneMode ? '1' : '0');
          }
        }
        return 0;
      case 'location':
        if (rest[0] === 'is-location-enabled') ctx.stdout.write(`${sys.locationEnabled}\n`);
        else if (rest[0] === 'set-location-enabled') sys.locationEnabled = rest[1] === 'true';
        return 0;
      case 'uimode':
        if (rest[0] === 'night') ctx.stdout.write(`Night mode: ${rest[1] ?? 'no'}\n`);
        return 0;
      default:
        ctx.stderr.write(`cmd: Can't find service: ${service}\n`);
        return 20;
    }
  };
}
