/**
 * Appium Settings (`io.appium.settings`, the helper app Appium installs on every phone) as
 * the virtual phone runs it: the phone cannot run an installed app's code, so the parts of
 * this one that Appium relies on are modeled here, answering as its receivers and services
 * do. Its broadcast receivers reply with result -1 (RESULT_OK) and their data; its
 * LocationService keeps the mock location Appium sets. An action of the app that is not
 * modeled says so instead of pretending to succeed.
 */
import type { Device } from './device.js';
import { IME_ACTION } from './ui/types.js';

export const APPIUM_SETTINGS_PACKAGE = 'io.appium.settings';

/** The app's input methods, which read what is typed while one is selected (`ime set`). */
export const APPIUM_IMES = {
  unicode: `${APPIUM_SETTINGS_PACKAGE}/.UnicodeIME`,
  appium: `${APPIUM_SETTINGS_PACKAGE}/.AppiumIME`,
  empty: `${APPIUM_SETTINGS_PACKAGE}/.EmptyIME`,
} as const;

/** The editor actions AppiumIME takes by name (appium-adb's list): EditorInfo's codes. */
const EDITOR_ACTIONS: Record<string, number> = {
  normal: IME_ACTION.UNSPECIFIED,
  unspecified: IME_ACTION.UNSPECIFIED,
  none: IME_ACTION.NONE,
  go: IME_ACTION.GO,
  search: IME_ACTION.SEARCH,
  send: IME_ACTION.SEND,
  next: IME_ACTION.NEXT,
  done: IME_ACTION.DONE,
  previous: IME_ACTION.PREVIOUS,
};

/**
 * What the selected input method makes of typed text (`input text`, whose key events reach
 * the input method first): AppiumIME takes `/name/` (or `/code/`) as an editor action
 * (appium-adb's performEditorAction types it); UnicodeIME decodes IMAP's modified UTF-7
 * (`&AOk-` is é: appium-adb's typeUnicode); any other input method types it as it is.
 */
export function appiumImeReads(ime: string, text: string): string | number {
  if (ime === APPIUM_IMES.appium) {
    const name = /^\/(\w+)\/$/.exec(text)?.[1];
    const action =
      name === undefined
        ? undefined
        : (EDITOR_ACTIONS[name.toLowerCase()] ?? (/^\d+$/.test(name) ? Number(name) : undefined));
    if (action !== undefined) return action;
  }
  return ime === APPIUM_IMES.unicode ? decodeModifiedUtf7(text) : text;
}

/** IMAP's modified UTF-7 (RFC 3501 5.1.3): `&-` is `&`, `&...-` is UTF-16 in base64 with `,` for `/`. */
function decodeModifiedUtf7(text: string): string {
  return text.replace(/&([A-Za-z0-9+,]*)-/g, (_, b64: string) => {
    if (b64 === '') return '&';
    const bytes = Buffer.from(b64.replace(/,/g, '/'), 'base64');
    let out = '';
    for (let i = 0; i + 1 < bytes.length; i += 2) out += String.fromCharCode(bytes.readUInt16BE(i));
    return out;
  });
}

/** What a broadcast to one of the app's receivers answered: its result code and data. */
export type ReceiverAnswer = { code: number; data?: string } | { unmodeled: string };

/** Whether an intent is for Appium Settings: its package's component, or one of its actions. */
export function isForAppiumSettings(component: { pkg: string } | null, action: string | null): boolean {
  return component?.pkg === APPIUM_SETTINGS_PACKAGE || !!action?.startsWith(`${APPIUM_SETTINGS_PACKAGE}.`);
}

const OK = -1;

/** Runs the receiver an Appium Settings broadcast is for. */
export function appiumSettingsBroadcast(
  device: Device,
  action: string | null,
  extras: ReadonlyMap<string, string>,
): ReceiverAnswer {
  const sys = device.system;
  switch (action) {
    case 'io.appium.settings.clipboard.get':
      // ClipboardReceiver: the clipboard's text, base64 (what Appium's getClipboard decodes).
      return { code: OK, data: Buffer.from(sys.clipboard).toString('base64') };
    case 'io.appium.settings.location': {
      // LocationInfoReceiver: "latitude longitude altitude" of the last location, none yet
      // leaves the result unset (Appium then says it cannot retrieve the location).
      const l = sys.mockLocation;
      if (!l) return { code: 0 };
      // forceUpdate asks Location Manager again; the tracker logs it (Appium's
      // refreshGpsCache waits for that line).
      if (extras.get('forceUpdate') === 'true') {
        const pid = device.processes.list().find((p) => p.name === APPIUM_SETTINGS_PACKAGE)?.pid;
        device.appLog(
          'I',
          'LocationTracker',
          'The current location has been successfully retrieved from Location Manager',
          pid,
        );
      }
      return { code: OK, data: `${l.latitude} ${l.longitude} ${l.altitude}` };
    }
    case 'io.appium.settings.notifications':
      // NLService's list: the phone's status bar holds no notifications.
      return { code: OK, data: JSON.stringify({ statusBarNotifications: [] }) };
    case 'io.appium.settings.sms.read':
      // SmsReader: the phone has no SIM and no messages.
      return { code: OK, data: JSON.stringify({ items: [], total: 0 }) };
    case 'io.appium.settings.animation': {
      const on = extras.get('setstatus') === 'enable';
      for (const key of ['animator_duration_scale', 'transition_animation_scale', 'window_animation_scale'])
        device.settings.put('global', key, on ? '1.0' : '0.0');
      return { code: OK, data: on ? 'enable' : 'disable' };
    }
    case 'io.appium.settings.wifi':
      device.setWifi(extras.get('setstatus') === 'enable');
      return { code: OK };
    case 'io.appium.settings.bluetooth':
      device.settings.put('global', 'bluetooth_on', extras.get('setstatus') === 'enable' ? '1' : '0');
      return { code: OK };
    default:
      return { unmodeled: action ?? '(no action)' };
  }
}

/** Starts one of the app's services: LocationService takes the mock location it is given. */
export function appiumSettingsService(
  device: Device,
  cls: string,
  extras: ReadonlyMap<string, string>,
): void {
  if (cls !== 'io.appium.settings.LocationService') return;
  const latitude = Number(extras.get('latitude'));
  const longitude = Number(extras.get('longitude'));
  if (!Number.isFinite(latitude) || !Number.isFinite(longitude)) return;
  const altitude = Number(extras.get('altitude') ?? 0);
  device.system.mockLocation = { latitude, longitude, altitude: Number.isFinite(altitude) ? altitude : 0 };
}
