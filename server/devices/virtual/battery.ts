/**
 * The battery as Android's BatteryService keeps it: the values the hardware reports (a
 * full battery on USB power), and the ones a shell forced with `dumpsys battery set`,
 * `unplug` and `reset` (or `cmd battery ...`), which freeze the state until a reset, as
 * on a phone. What reads the battery (`dumpsys battery`, the status bar, the UiAutomator2
 * server's battery info) reads `values()`.
 */

/** BatteryManager.BATTERY_STATUS_*: 2 charging, 3 discharging, 4 not charging, 5 full. */
export interface BatteryValues {
  ac: boolean;
  usb: boolean;
  wireless: boolean;
  dock: boolean;
  status: number;
  /** BatteryManager.BATTERY_HEALTH_GOOD. */
  health: number;
  present: boolean;
  /** Of 100 (the scale). */
  level: number;
  /** Charge counter, in µAh. */
  counter: number;
  /** Tenths of a degree Celsius. */
  temp: number;
  /** Millivolts. */
  voltage: number;
  invalid: number;
}

/** What the phone's hardware reports: full, on USB, as an emulator's battery does. */
const HARDWARE: Readonly<BatteryValues> = {
  ac: false,
  usb: true,
  wireless: false,
  dock: false,
  status: 2,
  health: 2,
  present: true,
  level: 100,
  counter: 4_000_000,
  temp: 250,
  voltage: 4200,
  invalid: 0,
};

/** The kernel's names of a BatteryManager status and health (power_supply's sysfs class). */
const SYSFS_STATUS: Record<number, string> = {
  2: 'Charging',
  3: 'Discharging',
  4: 'Not charging',
  5: 'Full',
};
const SYSFS_HEALTH: Record<number, string> = { 2: 'Good', 3: 'Overheat', 4: 'Dead', 5: 'Over voltage' };

/**
 * /sys/class/power_supply as the kernel's drivers publish the hardware's state: the battery
 * and the USB and mains chargers, each a directory of files and their `uevent`. What a shell
 * forced with `dumpsys battery set` stays in BatteryService, as on a phone.
 */
export function powerSupplies(
  hw: Readonly<BatteryValues> = HARDWARE,
): Record<string, Record<string, string>> {
  return {
    ac: { type: 'Mains', online: hw.ac ? '1' : '0' },
    usb: { type: 'USB', online: hw.usb ? '1' : '0' },
    battery: {
      type: 'Battery',
      status: SYSFS_STATUS[hw.status] ?? 'Unknown',
      health: SYSFS_HEALTH[hw.health] ?? 'Unknown',
      present: hw.present ? '1' : '0',
      technology: 'Li-ion',
      capacity: String(hw.level),
      voltage_now: String(hw.voltage * 1000),
      temp: String(hw.temp),
      charge_counter: String(hw.counter),
    },
  };
}

/** The properties `set` and `get` take, in the order the help lists them. */
const KEYS = [
  'ac',
  'usb',
  'wireless',
  'dock',
  'status',
  'level',
  'temp',
  'present',
  'counter',
  'invalid',
] as const;
type Key = (typeof KEYS)[number];
const isKey = (key: string): key is Key => (KEYS as readonly string[]).includes(key);

export class Battery {
  private forced: BatteryValues | null = null;
  private readonly listeners = new Set<() => void>();

  /** The battery as the system sees it now. */
  values(): Readonly<BatteryValues> {
    return this.forced ?? HARDWARE;
  }

  /** BatteryManager.BATTERY_PLUGGED_* bits of the sources powering it now (0: on battery). */
  plugType(): number {
    const v = this.values();
    return (v.ac ? 1 : 0) | (v.usb ? 2 : 0) | (v.wireless ? 4 : 0) | (v.dock ? 8 : 0);
  }

  /** Called after every change the system would broadcast (ACTION_BATTERY_CHANGED). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private force(change: Partial<BatteryValues>): void {
    this.forced = { ...this.values(), ...change };
    for (const l of this.listeners) l();
  }

  private reset(): void {
    if (!this.forced) return;
    this.forced = null;
    for (const l of this.listeners) l();
  }

  /** `dumpsys battery` without arguments. */
  dump(): string {
    const v = this.values();
    return `Current Battery Service state:
${this.forced ? "  (UPDATES STOPPED -- use 'reset' to restart)\n" : ''}  AC powered: ${v.ac}
  USB powered: ${v.usb}
  Wireless powered: ${v.wireless}
  Dock powered: ${v.dock}
  Max charging current: 500000
  Max charging voltage: 5000000
  Charge counter: ${v.counter}
  status: ${v.status}
  health: ${v.health}
  present: ${v.present}
  level: ${v.level}
  scale: 100
  voltage: ${v.voltage}
  temperature: ${v.temp}
  technology: Li-ion
`;
  }

  /**
   * BatteryService's shell command (`cmd battery ARGS`, and `dumpsys battery ARGS`, which
   * runs the same): what it prints, and its status (-1 for a missing or bad value).
   */
  command(args: readonly string[]): { out: string; err: string; status: number } {
    const [cmd, ...rest] = args;
    // -f forces a broadcast and prints its sequence number; there is one broadcast here.
    const force = rest.includes('-f');
    const [key, value] = rest.filter((a) => a !== '-f');
    const done = (out = '') => ({ out: out + (force ? '1\n' : ''), err: '', status: 0 });
    switch (cmd) {
      case undefined:
      case 'help':
      case '-h':
        return { out: BATTERY_HELP, err: '', status: 0 };
      case 'unplug':
        this.force({ ac: false, usb: false, wireless: false, dock: false });
        return done();
      case 'reset':
        this.reset();
        return done();
      case 'get': {
        if (key === undefined) return { out: 'No property specified\n', err: '', status: -1 };
        if (!isKey(key)) return { out: `Unknown get option: ${key}\n`, err: '', status: 0 };
        return { out: `${String(this.values()[key])}\n`, err: '', status: 0 };
      }
      case 'set': {
        if (key === undefined) return { out: 'No property specified\n', err: '', status: -1 };
        if (value === undefined) return { out: 'No value specified\n', err: '', status: -1 };
        // Integer.parseInt: an optional sign and decimal digits, within 32 bits.
        const n = /^[+-]?\d+$/.test(value) ? Number(value) : NaN;
        if (!Number.isSafeInteger(n) || n > 2 ** 31 - 1 || n < -(2 ** 31))
          return { out: `Bad value: ${value}\n`, err: '', status: -1 };
        if (!isKey(key)) return { out: `Unknown set option: ${key}\n`, err: '', status: 0 };
        const flag =
          key === 'ac' || key === 'usb' || key === 'wireless' || key === 'dock' || key === 'present';
        this.force({ [key]: flag ? n !== 0 : n });
        return done();
      }
      default:
        return { out: '', err: `Unknown command: ${cmd}\n`, status: -1 };
    }
  }
}

const BATTERY_HELP = `Battery service (battery) commands:
  help
    Print this help text.
  get [-f] [${KEYS.join('|')}]
  set [-f] [${KEYS.join('|')}] <value>
    Force a battery property value, freezing battery state.
    -f: force a battery change broadcast be sent, prints new sequence.
  unplug [-f]
    Force battery unplugged, freezing battery state.
    -f: force a battery change broadcast be sent, prints new sequence.
  reset [-f]
    Unfreeze battery state, returning to current hardware values.
    -f: force a battery change broadcast be sent, prints new sequence.
`;
