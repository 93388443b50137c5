/** `settings` namespaces (system, secure, global) with Android 14's usual defaults. */
import type { Rotation } from './ui/types.js';

export type SettingsNamespace = 'system' | 'secure' | 'global';

const PROVIDERS_ALLOWED = 'location_providers_allowed';
/** The providers LOCATION_PROVIDERS_ALLOWED lists while location is on. */
const LOCATION_PROVIDERS = 'gps,network';

const DEFAULTS: Record<SettingsNamespace, Record<string, string>> = {
  system: {
    accelerometer_rotation: '0',
    dim_screen: '1',
    font_scale: '1.0',
    haptic_feedback_enabled: '1',
    screen_brightness: '102',
    screen_brightness_mode: '1',
    screen_off_timeout: '60000',
    sound_effects_enabled: '1',
    time_12_24: '24',
    user_rotation: '0',
    volume_music: '7',
    volume_ring: '5',
  },
  secure: {
    accessibility_enabled: '0',
    android_id: '',
    default_input_method: 'com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME',
    enabled_input_methods: 'com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME',
    install_non_market_apps: '1',
    location_mode: '3',
    location_providers_allowed: LOCATION_PROVIDERS,
    lockscreen_disabled: '1',
    show_ime_with_hard_keyboard: '0',
    skip_first_use_hints: '1',
    user_setup_complete: '1',
  },
  global: {
    adb_enabled: '1',
    airplane_mode_on: '0',
    animator_duration_scale: '1.0',
    auto_time: '1',
    auto_time_zone: '1',
    bluetooth_on: '0',
    boot_count: '1',
    data_roaming: '0',
    development_settings_enabled: '1',
    device_name: 'Pixel 8',
    device_provisioned: '1',
    mobile_data: '1',
    package_verifier_user_consent: '-1',
    stay_on_while_plugged_in: '7',
    transition_animation_scale: '1.0',
    verifier_verify_adb_installs: '0',
    window_animation_scale: '1.0',
    wifi_on: '1',
  },
};

/** Whether a LOCATION_MODE value is on: anything but LOCATION_MODE_OFF (0), as Android reads it. */
const locationOn = (mode: string | null): boolean => mode !== null && mode !== '0';

/**
 * The location switch, kept where Android 14 keeps it: Settings.Secure.LOCATION_MODE, which
 * LocationManager's isLocationEnabled reads and setLocationEnabled writes (LOCATION_MODE_ON,
 * 3, or off, 0). `cmd location`, `settings put secure location_mode` and the Settings app's
 * toggle are one state.
 */
export const locationSwitch = {
  on: (settings: SettingsStore): boolean => locationOn(settings.get('secure', 'location_mode')),
  set(settings: SettingsStore, on: boolean): void {
    settings.put('secure', 'location_mode', on ? '3' : '0');
  },
};

/**
 * Wi-Fi on or off, kept where WifiSettingsStore keeps it: Settings.Global.WIFI_ON, 0 off, 1
 * on, 2 on in airplane mode (turned on after airplane mode was), 3 off for airplane mode
 * (it was on when airplane mode came). On is 1 or 2 (isWifiToggleEnabled).
 */
export const wifiSwitch = {
  on: (settings: SettingsStore): boolean => {
    const state = settings.get('global', 'wifi_on');
    return state === '1' || state === '2';
  },
  /** handleWifiToggled: in airplane mode, on is 2 (Wi-Fi is among the toggleable radios). */
  set(settings: SettingsStore, on: boolean): void {
    settings.put('global', 'wifi_on', on ? (airplaneMode.on(settings) ? '2' : '1') : '0');
  },
};

/**
 * Airplane mode, as ConnectivityManager.setAirplaneMode sets it (`cmd connectivity
 * airplane-mode`, the Settings app's toggle): Settings.Global.AIRPLANE_MODE_ON, and the
 * broadcast Wi-Fi answers (WifiSettingsStore.handleAirplaneModeToggled): on, Wi-Fi that was
 * on goes off (3); off, Wi-Fi off or on for airplane mode is on again (1). A bare `settings
 * put global airplane_mode_on` sends no broadcast: the radios stay as they are, as on a phone.
 */
export const airplaneMode = {
  on: (settings: SettingsStore): boolean => settings.get('global', 'airplane_mode_on') === '1',
  set(settings: SettingsStore, on: boolean): void {
    settings.put('global', 'airplane_mode_on', on ? '1' : '0');
    const wifi = settings.get('global', 'wifi_on');
    if (on && wifi === '1') settings.put('global', 'wifi_on', '3');
    if (!on && (wifi === '2' || wifi === '3')) settings.put('global', 'wifi_on', '1');
  },
};

export function isNamespace(value: string): value is SettingsNamespace {
  return value === 'system' || value === 'secure' || value === 'global';
}

export class SettingsStore {
  /** Per-namespace overrides; a null value is a deleted default. */
  private readonly changed: Record<SettingsNamespace, Map<string, string | null>> = {
    system: new Map(),
    secure: new Map(),
    global: new Map(),
  };

  private readonly listeners = new Set<(ns: SettingsNamespace, key: string) => void>();

  constructor(private readonly androidId: string) {}

  /** Calls listener after every put or delete (the screen redraws what settings show). */
  onChange(listener: (ns: SettingsNamespace, key: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changedKey(ns: SettingsNamespace, key: string): void {
    for (const l of this.listeners) l(ns, key);
  }

  get(ns: SettingsNamespace, key: string): string | null {
    const local = this.changed[ns];
    if (local.has(key)) return local.get(key) ?? null;
    if (ns === 'secure' && key === 'android_id') return this.androidId;
    return DEFAULTS[ns][key] ?? null;
  }

  put(ns: SettingsNamespace, key: string, value: string): void {
    this.changed[ns].set(key, value);
    this.changedKey(ns, key);
    // The location providers follow the location switch, as LocationManagerService keeps
    // LOCATION_PROVIDERS_ALLOWED for older readers when LOCATION_MODE changes.
    if (ns === 'secure' && key === 'location_mode') {
      this.changed.secure.set(PROVIDERS_ALLOWED, locationOn(value) ? LOCATION_PROVIDERS : '');
      this.changedKey('secure', PROVIDERS_ALLOWED);
    }
  }

  /** Returns how many rows were deleted (what `settings delete` prints). */
  delete(ns: SettingsNamespace, key: string): number {
    const had = this.get(ns, key) !== null;
    this.changed[ns].set(key, null);
    this.changedKey(ns, key);
    return had ? 1 : 0;
  }

  list(ns: SettingsNamespace): [string, string][] {
    const out = new Map<string, string>(Object.entries(DEFAULTS[ns]));
    if (ns === 'secure') out.set('android_id', this.androidId);
    for (const [k, v] of this.changed[ns]) {
      if (v === null) out.delete(k);
      else out.set(k, v);
    }
    return [...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  save(): Record<SettingsNamespace, [string, string | null][]> {
    return {
      system: [...this.changed.system],
      secure: [...this.changed.secure],
      global: [...this.changed.global],
    };
  }

  restore(state: Partial<Record<SettingsNamespace, [string, string | null][]>>): void {
    for (const ns of ['system', 'secure', 'global'] as const) {
      for (const [k, v] of state[ns] ?? []) this.changed[ns].set(k, v);
    }
  }
}

/**
 * The rotation a `user_rotation` value locks the display at: a Surface.ROTATION_* constant
 * (0 to 3) as Integer.parseInt reads it. `settings put` stores any string, and the window
 * manager honours only those four, so anything else (`7`, `-1`, `1.0`, `sideways`, none)
 * is upright (ROTATION_0), the setting's default.
 */
export function parseUserRotation(value: string | null): Rotation {
  if (value === null || !/^[-+]?\d+$/.test(value)) return 0;
  const n = Number(value);
  return n === 1 || n === 2 || n === 3 ? n : 0;
}

/**
 * The window manager's rotation lock, kept where Android keeps it (Settings.System): frozen
 * while `accelerometer_rotation` is 0, at `user_rotation`. What `wm user-rotation` and
 * UiAutomation's setRotation (Appium's setOrientation) change; the display follows it.
 */
export const userRotation = {
  frozen: (settings: SettingsStore): boolean => settings.get('system', 'accelerometer_rotation') !== '1',
  /** The rotation the lock is at (parseUserRotation: 0 for a value the window manager does not honour). */
  rotation: (settings: SettingsStore): Rotation => parseUserRotation(settings.get('system', 'user_rotation')),
  freeze(settings: SettingsStore, rotation: number): void {
    settings.put('system', 'user_rotation', String(rotation));
    settings.put('system', 'accelerometer_rotation', '0');
  },
  thaw(settings: SettingsStore): void {
    settings.put('system', 'accelerometer_rotation', '1');
  },
};
