/**
 * The Settings app: a home list of categories (scrollable) and one detail page per
 * category. Toggles read and write real settings through the host, so `settings get`
 * over adb sees what a tap changed and the status bar follows Wi-Fi and airplane mode.
 */
import { drawIcon, type IconName } from '../icons.js';
import { rect } from '../raster.js';
import { appColor, isDark } from '../theme.js';
import type { ViewNode } from '../views.js';
import { ViewFactory } from '../views.js';
import { appBar, drawLabel, fillFrame, listRow } from '../widgets.js';
import { formatClock } from '../system-bars.js';
import type { LockKind } from '../types.js';
import type { ScreenContext, ScreenView, SettingsHomeState, SettingsPageState } from './screen.js';

/** How Settings > Security & privacy names each kind of screen lock. */
const SCREEN_LOCK_NAMES: Record<LockKind, string> = {
  none: 'None',
  swipe: 'Swipe',
  pin: 'PIN',
  password: 'Password',
  pattern: 'Pattern',
};

export const SETTINGS_PACKAGE = 'com.android.settings';
export const SETTINGS_ACTIVITY = 'com.android.settings.Settings';
/** The activity Settings uses for every page opened from inside the app. */
export const SETTINGS_SUB_ACTIVITY = 'com.android.settings.SubSettings';
/** App info, what APPLICATION_DETAILS_SETTINGS with `package:NAME` opens. */
export const APP_DETAILS_ACTIVITY = 'com.android.settings.applications.InstalledAppDetails';

/** The package an App info intent's data (`package:NAME`) names; '' without data. */
export function appInfoPackage(data: string | null | undefined): string {
  return data?.replace(/^package:/, '') ?? '';
}

type Namespace = 'system' | 'secure' | 'global';

interface Category {
  page: string;
  title: string;
  summary: (ctx: ScreenContext) => string;
  icon: IconName;
  badge: number;
  /** The Settings$...Activity that opens this page directly (`am start -n`). */
  activity: string;
}

const on = (ctx: ScreenContext, ns: Namespace, key: string, fallback: string, onValue = '1') =>
  (ctx.setting(ns, key) ?? fallback) === onValue;

/** Wi-Fi is on at WIFI_ON 1, or 2 (turned on in airplane mode); 0 and 3 are off. */
export function wifiOn(ctx: Pick<ScreenContext, 'setting'>): boolean {
  const state = ctx.setting('global', 'wifi_on') ?? '1';
  return state === '1' || state === '2';
}

export function airplaneOn(ctx: Pick<ScreenContext, 'setting'>): boolean {
  return (ctx.setting('global', 'airplane_mode_on') ?? '0') === '1';
}

function deviceName(ctx: ScreenContext): string {
  return ctx.setting('global', 'device_name') ?? ctx.identity.model;
}

const CATEGORIES: readonly Category[] = [
  {
    page: 'network',
    title: 'Network & internet',
    summary: (ctx) =>
      airplaneOn(ctx)
        ? 'Airplane mode is on'
        : wifiOn(ctx)
          ? 'Wi-Fi, mobile data, hotspot'
          : 'Mobile data, hotspot',
    icon: 'wifi',
    badge: 0x1a73e8,
    activity: 'com.android.settings.Settings$NetworkDashboardActivity',
  },
  {
    page: 'connected',
    title: 'Connected devices',
    summary: () => 'Bluetooth, pairing',
    icon: 'bluetooth',
    badge: 0x188038,
    activity: 'com.android.settings.Settings$ConnectedDeviceDashboardActivity',
  },
  {
    page: 'apps',
    title: 'Apps',
    summary: (ctx) => `${ctx.apps().length} apps, default apps`,
    icon: 'apps',
    badge: 0xe37400,
    activity: 'com.android.settings.Settings$AppDashboardActivity',
  },
  {
    page: 'notifications',
    title: 'Notifications',
    summary: () => 'Notification history, conversations',
    icon: 'bell',
    badge: 0xd93025,
    activity: 'com.android.settings.Settings$ConfigureNotificationSettingsActivity',
  },
  {
    page: 'battery',
    title: 'Battery',
    summary: (ctx) => (on(ctx, 'global', 'low_power', '0') ? '100% - Battery Saver on' : '100%'),
    icon: 'battery',
    badge: 0x12858a,
    activity: 'com.android.settings.Settings$PowerUsageSummaryActivity',
  },
  {
    page: 'storage',
    title: 'Storage',
    summary: () => '34% used - 42.1 GB free',
    icon: 'storage',
    badge: 0x9334e6,
    activity: 'com.android.settings.Settings$StorageDashboardActivity',
  },
  {
    page: 'sound',
    title: 'Sound & vibration',
    summary: () => 'Volume, haptics, Do Not Disturb',
    icon: 'volume',
    badge: 0x3949ab,
    activity: 'com.android.settings.Settings$SoundSettingsActivity',
  },
  {
    page: 'display',
    title: 'Display',
    summary: () => 'Dark theme, font size, brightness',
    icon: 'brightness',
    badge: 0xf29900,
    activity: 'com.android.settings.Settings$DisplaySettingsActivity',
  },
  {
    page: 'wallpaper',
    title: 'Wallpaper & style',
    summary: () => 'Colors, themed icons, app grid',
    icon: 'palette',
    badge: 0xc5221f,
    activity: 'com.android.settings.Settings$WallpaperSettingsActivity',
  },
  {
    page: 'accessibility',
    title: 'Accessibility',
    summary: () => 'Display, interaction, audio',
    icon: 'accessibility',
    badge: 0x6d4c41,
    activity: 'com.android.settings.Settings$AccessibilitySettingsActivity',
  },
  {
    page: 'security',
    title: 'Security & privacy',
    summary: () => 'App security, device lock, permissions',
    icon: 'shield',
    badge: 0x188038,
    activity: 'com.android.settings.Settings$SecurityDashboardActivity',
  },
  {
    page: 'location',
    title: 'Location',
    summary: (ctx) => (on(ctx, 'secure', 'location_mode', '3', '3') ? 'On' : 'Off'),
    icon: 'location',
    badge: 0x00897b,
    activity: 'com.android.settings.Settings$LocationSettingsActivity',
  },
  {
    page: 'accounts',
    title: 'Passwords & accounts',
    summary: () => 'Saved passwords, autofill, synced accounts',
    icon: 'key',
    badge: 0x3949ab,
    activity: 'com.android.settings.Settings$AccountDashboardActivity',
  },
  {
    page: 'system',
    title: 'System',
    summary: () => 'Languages, gestures, time, backup',
    icon: 'info',
    badge: 0x5f6368,
    activity: 'com.android.settings.Settings$SystemDashboardActivity',
  },
  {
    page: 'about',
    title: 'About phone',
    summary: (ctx) => deviceName(ctx),
    icon: 'phone',
    badge: 0x5f6368,
    activity: 'com.android.settings.Settings$MyDeviceInfoActivity',
  },
];

/**
 * Settings activities the UI can show, with the intent actions that open them, for the
 * system image's manifest (so `am start -n ...` and `am start -a android.settings.X`
 * resolve). Each opens its page directly; BACK from it leaves Settings.
 */
export const SETTINGS_ACTIVITIES: ReadonlyArray<{
  activity: string;
  actions: readonly string[];
  /** The data scheme the intent must carry (App info's `package:NAME`). */
  scheme?: string;
}> = [
  { activity: SETTINGS_ACTIVITY, actions: ['android.settings.SETTINGS'] },
  { activity: SETTINGS_SUB_ACTIVITY, actions: [] },
  {
    activity: APP_DETAILS_ACTIVITY,
    actions: ['android.settings.APPLICATION_DETAILS_SETTINGS'],
    scheme: 'package',
  },
  {
    activity: 'com.android.settings.Settings$NetworkDashboardActivity',
    actions: ['android.settings.WIRELESS_SETTINGS', 'android.settings.AIRPLANE_MODE_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$WifiSettingsActivity',
    actions: ['android.settings.WIFI_SETTINGS'],
  },
  { activity: 'com.android.settings.Settings$ConnectedDeviceDashboardActivity', actions: [] },
  {
    activity: 'com.android.settings.Settings$BluetoothSettingsActivity',
    actions: ['android.settings.BLUETOOTH_SETTINGS'],
  },
  { activity: 'com.android.settings.Settings$AppDashboardActivity', actions: [] },
  {
    activity: 'com.android.settings.Settings$ManageApplicationsActivity',
    actions: ['android.settings.APPLICATION_SETTINGS', 'android.settings.MANAGE_APPLICATIONS_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$ConfigureNotificationSettingsActivity',
    actions: ['android.settings.NOTIFICATION_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$PowerUsageSummaryActivity',
    actions: ['android.intent.action.POWER_USAGE_SUMMARY'],
  },
  {
    activity: 'com.android.settings.Settings$StorageDashboardActivity',
    actions: ['android.settings.INTERNAL_STORAGE_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$SoundSettingsActivity',
    actions: ['android.settings.SOUND_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$DisplaySettingsActivity',
    actions: ['android.settings.DISPLAY_SETTINGS'],
  },
  { activity: 'com.android.settings.Settings$WallpaperSettingsActivity', actions: [] },
  {
    activity: 'com.android.settings.Settings$AccessibilitySettingsActivity',
    actions: ['android.settings.ACCESSIBILITY_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$SecurityDashboardActivity',
    actions: ['android.settings.SECURITY_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$LocationSettingsActivity',
    actions: ['android.settings.LOCATION_SOURCE_SETTINGS'],
  },
  {
    activity: 'com.android.settings.Settings$AccountDashboardActivity',
    actions: ['android.settings.SYNC_SETTINGS'],
  },
  { activity: 'com.android.settings.Settings$SystemDashboardActivity', actions: [] },
  {
    activity: 'com.android.settings.Settings$MyDeviceInfoActivity',
    actions: ['android.settings.DEVICE_INFO_SETTINGS'],
  },
  { activity: 'com.android.settings.Settings$DeviceInfoSettingsActivity', actions: [] },
  {
    activity: 'com.android.settings.Settings$NotificationAppListActivity',
    actions: ['android.settings.ALL_APPS_NOTIFICATION_SETTINGS'],
  },
];

/** The page an activity class opens, for `am start -n com.android.settings/<activity>`. */
export function settingsPageForActivity(activity: string): string | null {
  const short = activity.startsWith('.') ? SETTINGS_PACKAGE + activity : activity;
  const byActivity = CATEGORIES.find((c) => c.activity === short);
  if (byActivity) return byActivity.page;
  const aliases: Record<string, string> = {
    'com.android.settings.Settings$WifiSettingsActivity': 'network',
    'com.android.settings.Settings$DeviceInfoSettingsActivity': 'about',
    'com.android.settings.Settings$ManageApplicationsActivity': 'apps',
    'com.android.settings.Settings$BluetoothSettingsActivity': 'connected',
    'com.android.settings.Settings$NotificationAppListActivity': 'app-notifications',
    [APP_DETAILS_ACTIVITY]: 'app-info',
  };
  return aliases[short] ?? null;
}

interface RowSpec {
  name: string;
  title: string;
  summary?: string;
  toggle?: { value: boolean; set: (v: boolean) => void };
  onClick?: () => void;
  icon?: IconName;
  iconBadge?: number;
}

function toggleRow(
  ctx: ScreenContext,
  name: string,
  title: string,
  ns: Namespace,
  key: string,
  fallback: string,
  summary?: string,
  values: [string, string] = ['1', '0'],
): RowSpec {
  const value = (ctx.setting(ns, key) ?? fallback) === values[0];
  return {
    name,
    title,
    summary,
    toggle: {
      value,
      set: (v) => {
        ctx.putSetting(ns, key, v ? values[0] : values[1]);
        ctx.log('I', 'SettingsProvider', `${ns}/${key} = ${v ? values[0] : values[1]} (${title})`);
      },
    },
  };
}

function screenTimeout(ctx: ScreenContext): string {
  const ms = Number(ctx.setting('system', 'screen_off_timeout') ?? '60000');
  if (!Number.isFinite(ms) || ms <= 0) return 'Never';
  if (ms < 60000) return `After ${Math.round(ms / 1000)} seconds of inactivity`;
  const min = Math.round(ms / 60000);
  return `After ${min} minute${min === 1 ? '' : 's'} of inactivity`;
}

function pageTitle(page: string): string {
  if (page === 'app-info') return 'App info';
  if (page === 'app-notifications') return 'App notifications';
  return CATEGORIES.find((c) => c.page === page)?.title ?? 'Settings';
}

/** Taps on Build number that make a developer (BuildNumberPreferenceController). */
const DEVELOPER_TAPS = 7;

/** Developer options are on (Settings.Global.DEVELOPMENT_SETTINGS_ENABLED). */
function developer(ctx: ScreenContext): boolean {
  return ctx.setting('global', 'development_settings_enabled') === '1';
}

/**
 * A tap on About phone's Build number, as Settings counts them: seven turn developer options
 * on, the last four each said in a toast; once on, a tap says so.
 */
function tapBuildNumber(state: SettingsPageState, ctx: ScreenContext): void {
  if (developer(ctx)) {
    ctx.toast('No need, you are already a developer.');
    return;
  }
  const left = (state.devTapsLeft ?? DEVELOPER_TAPS) - 1;
  state.devTapsLeft = left;
  if (left === 0) {
    ctx.putSetting('global', 'development_settings_enabled', '1');
    ctx.toast('You are now a developer!');
  } else if (left < DEVELOPER_TAPS - 2) {
    ctx.toast(`You are now ${left} ${left === 1 ? 'step' : 'steps'} away from being a developer.`);
  }
}

function pageRows(state: SettingsPageState, ctx: ScreenContext): RowSpec[] {
  const { identity } = ctx;
  switch (state.page) {
    case 'network':
      return [
        {
          name: 'internet',
          title: 'Internet',
          summary:
            airplaneOn(ctx) && !wifiOn(ctx)
              ? 'Not connected'
              : wifiOn(ctx)
                ? 'phonelease-wifi'
                : 'Mobile data',
          icon: 'wifi',
        },
        {
          name: 'wifi',
          title: 'Wi-Fi',
          summary: 'Use Wi-Fi',
          // On at 1 or 2, so not a plain toggle of one value; the phone's Wi-Fi service
          // writes which (setSetting).
          toggle: {
            value: wifiOn(ctx),
            set: (v) => {
              ctx.putSetting('global', 'wifi_on', v ? '1' : '0');
              ctx.log('I', 'SettingsProvider', `global/wifi_on = ${v ? '1' : '0'} (Wi-Fi)`);
            },
          },
        },
        toggleRow(ctx, 'airplane', 'Airplane mode', 'global', 'airplane_mode_on', '0'),
        toggleRow(
          ctx,
          'mobile_data',
          'Mobile data',
          'global',
          'mobile_data',
          '1',
          'Access data using mobile network',
        ),
        { name: 'hotspot', title: 'Hotspot & tethering', summary: 'Off' },
        { name: 'data_saver', title: 'Data Saver', summary: 'Off' },
        { name: 'vpn', title: 'VPN', summary: 'None' },
        { name: 'private_dns', title: 'Private DNS', summary: 'Automatic' },
      ];
    case 'connected':
      return [
        toggleRow(ctx, 'bluetooth', 'Bluetooth', 'global', 'bluetooth_on', '0', 'Connect to nearby devices'),
        { name: 'pair', title: 'Pair new device', icon: 'bluetooth' },
        { name: 'preferences', title: 'Connection preferences', summary: 'Bluetooth, NFC, Cast' },
      ];
    case 'apps':
      return [
        { name: 'all', title: `See all ${ctx.apps().length} apps` },
        ...ctx.apps().map((a): RowSpec => ({
          name: `app/${a.package}`,
          title: a.label,
          summary: a.package,
          icon: 'android',
          iconBadge: appColor(a.package),
          onClick: () =>
            ctx.push({
              kind: 'settings-page',
              id: ctx.nextId(),
              activity: SETTINGS_SUB_ACTIVITY,
              page: 'app-info',
              arg: a.package,
              scroll: 0,
            }),
        })),
        { name: 'default', title: 'Default apps', summary: 'Launcher3, Chrome, and Messages' },
      ];
    case 'app-info': {
      const pkg = state.arg ?? '';
      return [
        { name: 'label', title: ctx.label(pkg), summary: pkg, icon: 'android', iconBadge: appColor(pkg) },
        { name: 'open', title: 'Open', summary: 'Start the app', onClick: () => ctx.launch(pkg) },
        {
          name: 'force_stop',
          title: 'Force stop',
          summary: 'Stop the app and forget its screens',
          onClick: () => ctx.forceStop(pkg),
        },
        { name: 'notifications', title: 'Notifications', summary: 'On' },
        { name: 'permissions', title: 'Permissions', summary: 'No permissions requested' },
        { name: 'storage', title: 'Storage & cache', summary: '12.3 MB used in internal storage' },
      ];
    }
    case 'app-notifications':
      // Settings > Notifications > App notifications: every app may notify.
      return ctx.apps().map((a): RowSpec => ({
        name: `app/${a.package}`,
        title: a.label,
        summary: 'All notifications',
        icon: 'android',
        iconBadge: appColor(a.package),
      }));
    case 'notifications':
      return [
        {
          name: 'app_notifications',
          title: 'App notifications',
          onClick: () =>
            ctx.push({
              kind: 'settings-page',
              id: ctx.nextId(),
              activity: SETTINGS_SUB_ACTIVITY,
              page: 'app-notifications',
              scroll: 0,
            }),
        },
        { name: 'history', title: 'Notification history' },
        { name: 'conversations', title: 'Conversations', summary: 'No priority conversations' },
        toggleRow(
          ctx,
          'dnd',
          'Do Not Disturb',
          'global',
          'zen_mode',
          '0',
          'Only get notified by important people and apps',
        ),
        toggleRow(
          ctx,
          'lock_screen',
          'Notifications on lock screen',
          'secure',
          'lock_screen_show_notifications',
          '1',
        ),
      ];
    case 'battery':
      return [
        { name: 'level', title: 'Battery level', summary: '100% - Charging' },
        toggleRow(ctx, 'saver', 'Battery Saver', 'global', 'low_power', '0', 'Extends battery life'),
        toggleRow(
          ctx,
          'percent',
          'Battery percentage',
          'system',
          'status_bar_show_battery_percent',
          '0',
          'Show battery percentage in status bar',
        ),
        { name: 'usage', title: 'Battery usage', summary: 'View usage for past 24 hours' },
      ];
    case 'storage':
      return [
        { name: 'used', title: '21.9 GB used', summary: 'of 64 GB' },
        { name: 'system', title: 'System', summary: '12.4 GB' },
        { name: 'apps', title: 'Apps', summary: '6.1 GB' },
        { name: 'images', title: 'Images', summary: '1.8 GB' },
        { name: 'documents', title: 'Documents & other', summary: '1.6 GB' },
      ];
    case 'sound':
      return [
        { name: 'media', title: 'Media volume', summary: '60%' },
        { name: 'ring', title: 'Ring volume', summary: '80%' },
        toggleRow(ctx, 'dnd', 'Do Not Disturb', 'global', 'zen_mode', '0'),
        toggleRow(ctx, 'vibrate', 'Vibrate for calls', 'system', 'vibrate_when_ringing', '1'),
        toggleRow(ctx, 'touch_sounds', 'Touch sounds', 'system', 'sound_effects_enabled', '1'),
      ];
    case 'display':
      return [
        toggleRow(ctx, 'dark', 'Dark theme', 'secure', 'ui_night_mode', '1', 'Use a dark background', [
          '2',
          '1',
        ]),
        toggleRow(ctx, 'adaptive', 'Adaptive brightness', 'system', 'screen_brightness_mode', '1'),
        { name: 'timeout', title: 'Screen timeout', summary: screenTimeout(ctx) },
        toggleRow(ctx, 'rotate', 'Auto-rotate screen', 'system', 'accelerometer_rotation', '0'),
        { name: 'font', title: 'Display size and text', summary: 'Default' },
      ];
    case 'wallpaper':
      return [
        { name: 'wallpaper', title: 'Wallpaper', summary: 'phonelease dusk' },
        { name: 'colors', title: 'Wallpaper colors', summary: 'Purple' },
        toggleRow(ctx, 'themed', 'Themed icons', 'secure', 'theme_customization_themed_icons', '0'),
      ];
    case 'accessibility':
      return [
        { name: 'talkback', title: 'TalkBack', summary: 'Off' },
        toggleRow(
          ctx,
          'daltonizer',
          'Color correction',
          'secure',
          'accessibility_display_daltonizer_enabled',
          '0',
        ),
        {
          name: 'animations',
          title: 'Remove animations',
          toggle: {
            value: ['window_animation_scale', 'transition_animation_scale', 'animator_duration_scale'].every(
              (k) => ['0', '0.0'].includes(ctx.setting('global', k) ?? '1'),
            ),
            set: (v) => {
              for (const k of [
                'window_animation_scale',
                'transition_animation_scale',
                'animator_duration_scale',
              ])
                ctx.putSetting('global', k, v ? '0' : '1');
            },
          },
        },
      ];
    case 'security':
      return [
        { name: 'screen_lock', title: 'Screen lock', summary: SCREEN_LOCK_NAMES[ctx.lockKind()] },
        { name: 'find', title: 'Find My Device', summary: 'Off' },
        { name: 'update', title: 'Security update', summary: 'Up to date' },
        { name: 'permissions', title: 'Permission manager', summary: 'Control app access to your data' },
      ];
    case 'location':
      return [
        toggleRow(ctx, 'use', 'Use location', 'secure', 'location_mode', '3', undefined, ['3', '0']),
        { name: 'recent', title: 'Recent access', summary: 'No apps accessed location recently' },
        { name: 'services', title: 'Location services', summary: 'Wi-Fi and Bluetooth scanning' },
      ];
    case 'accounts':
      return [
        { name: 'passwords', title: 'Passwords', summary: '0 saved passwords' },
        { name: 'autofill', title: 'Autofill service', summary: 'None' },
        { name: 'add', title: 'Add account', icon: 'person' },
      ];
    case 'system':
      return [
        { name: 'languages', title: 'Languages', summary: 'English (United States)' },
        { name: 'time', title: 'Date & time', summary: `${formatClock(ctx.now())} (phone time)` },
        { name: 'gestures', title: 'Gestures' },
        { name: 'backup', title: 'Backup', summary: 'Off' },
        ...(developer(ctx) ? [{ name: 'developer', title: 'Developer options' }] : []),
        { name: 'reset', title: 'Reset options' },
      ];
    case 'about':
      return [
        { name: 'device_name', title: 'Device name', summary: deviceName(ctx) },
        { name: 'phone_number', title: 'Phone number', summary: 'Unknown' },
        { name: 'model', title: 'Model', summary: identity.model },
        { name: 'manufacturer', title: 'Manufacturer', summary: identity.manufacturer },
        { name: 'android_version', title: 'Android version', summary: identity.release },
        { name: 'api_level', title: 'API level', summary: String(identity.sdk) },
        {
          name: 'build',
          title: 'Build number',
          summary: identity.buildId,
          onClick: () => tapBuildNumber(state, ctx),
        },
      ];
    default:
      return [];
  }
}

const ROW_H = 72;

/** Lays rows out in a scrolling RecyclerView below the app bar. */
function rowList(
  f: ViewFactory,
  ctx: ScreenContext,
  top: number,
  state: { scroll: number },
  lead: { height: number; build: (frame: ReturnType<typeof rect>) => ViewNode | null } | null,
  rows: RowSpec[],
): ViewNode {
  const { m } = ctx;
  const viewport = rect(0, top, m.width, m.content.bottom - top);
  const rowH = ROW_H * m.dp;
  const leadH = lead ? lead.height : 0;
  const contentH = leadH + rows.length * rowH + 16 * m.dp;
  const maxScroll = Math.max(0, contentH - (viewport.bottom - viewport.top));
  state.scroll = Math.max(0, Math.min(state.scroll, maxScroll));
  const children = f.within(viewport, () => {
    const out: Array<ViewNode | null> = [];
    let y = top - state.scroll;
    if (lead) {
      out.push(lead.build(rect(0, y, m.width, leadH)));
      y += leadH;
    }
    for (const r of rows) {
      const toggle = r.toggle;
      out.push(
        listRow(f, ctx, `row/${r.name}`, rect(0, y, m.width, rowH), {
          title: r.title,
          summary: r.summary,
          icon: r.icon,
          iconBadge: r.iconBadge,
          toggle: toggle?.value,
          onClick:
            r.onClick ??
            (toggle
              ? () => {
                  toggle.set(!toggle.value);
                  ctx.changed();
                }
              : undefined),
        }),
      );
      y += rowH;
    }
    return out;
  });
  return f.root('list', 'androidx.recyclerview.widget.RecyclerView', viewport, {
    resourceId: 'com.android.settings:id/recycler_view',
    scrollable: maxScroll > 0,
    focusable: true,
    clipChildren: true,
    onScroll: (dy) => {
      const next = Math.max(0, Math.min(maxScroll, state.scroll + dy));
      if (next !== state.scroll) {
        state.scroll = next;
        ctx.changed();
      }
    },
    children,
  });
}

function chrome(ctx: ScreenContext): Omit<ScreenView, 'content'> {
  const bg = ctx.colors.surfaceContainer;
  return {
    background: bg,
    statusBar: { background: bg, lightIcons: isDark(bg) },
    navBar: { background: bg, lightIcons: isDark(bg) },
  };
}

export function buildSettingsHome(state: SettingsHomeState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const f = new ViewFactory(SETTINGS_PACKAGE, `settings-${state.id}`);
  const bar = appBar(f, ctx, {
    title: 'Settings',
    background: ctx.colors.surfaceContainer,
    foreground: ctx.colors.onSurface,
    large: true,
  });
  const search = {
    height: 72 * m.dp,
    build: (frame: ReturnType<typeof rect>) => {
      const pill = rect(16 * m.dp, frame.top + 4 * m.dp, m.width - 32 * m.dp, 56 * m.dp);
      return f.node('search', 'android.widget.FrameLayout', frame, {
        resourceId: 'com.android.settings:id/search_bar',
        children: [
          f.node('search/text', 'android.widget.TextView', pill, {
            resourceId: 'com.android.settings:id/search_action_bar_title',
            text: 'Search Settings',
            paint: (p, n) => {
              const r = n.frame;
              p.canvas.fillPill(r, ctx.colors.surfaceContainerHighest);
              const cy = (r.top + r.bottom) / 2;
              drawIcon(
                p.canvas,
                'search',
                r.left + 32 * m.dp,
                cy,
                24 * m.dp,
                ctx.colors.onSurfaceVariant,
                ctx.colors.surfaceContainerHighest,
              );
              drawLabel(
                p,
                'Search Settings',
                rect(r.left + 56 * m.dp, r.top, r.right - r.left - 72 * m.dp, r.bottom - r.top),
                {
                  scale: m.text.body * 1.05,
                  color: ctx.colors.onSurfaceVariant,
                },
              );
            },
          }),
        ],
      });
    },
  };
  const list = rowList(
    f,
    ctx,
    m.content.top + bar.height,
    state,
    search,
    CATEGORIES.map((c) => ({
      name: c.page,
      title: c.title,
      summary: c.summary(ctx),
      icon: c.icon,
      iconBadge: c.badge,
      onClick: () =>
        ctx.push({
          kind: 'settings-page',
          id: ctx.nextId(),
          activity: SETTINGS_SUB_ACTIVITY,
          page: c.page,
          scroll: 0,
        }),
    })),
  );
  const root = f.root('root', 'android.widget.LinearLayout', m.content, {
    resourceId: 'com.android.settings:id/main_content',
    paint: fillFrame(ctx.colors.surfaceContainer),
    children: [bar.node, list],
  });
  return { content: [root], ...chrome(ctx) };
}

export function buildSettingsPage(state: SettingsPageState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const f = new ViewFactory(SETTINGS_PACKAGE, `settings-${state.id}`);
  const bar = appBar(f, ctx, {
    title: pageTitle(state.page),
    background: ctx.colors.surfaceContainer,
    foreground: ctx.colors.onSurface,
    onBack: () => ctx.pop(),
  });
  const list = rowList(f, ctx, m.content.top + bar.height, state, null, pageRows(state, ctx));
  const root = f.root('root', 'android.widget.LinearLayout', m.content, {
    resourceId: 'com.android.settings:id/main_content',
    paint: fillFrame(ctx.colors.surfaceContainer),
    children: [bar.node, list],
  });
  return { content: [root], ...chrome(ctx) };
}
