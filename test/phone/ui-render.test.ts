import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { DisplayListPlayer } from '../../server/devices/virtual/ui/display-list.js';
import { hasGlyph, TextRenderer } from '../../server/devices/virtual/ui/font.js';
import { createPhoneUi, KEYCODE } from '../../server/devices/virtual/ui/index.js';
import { Canvas } from '../../server/devices/virtual/ui/raster.js';
import { appColor, COLORS, DARK_COLORS } from '../../server/devices/virtual/ui/theme.js';
import type { PhoneUi, PhoneUiHost, UiNodeInfo } from '../../server/devices/virtual/ui/types.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

function makeUi(
  clock: { now: Date } = { now: new Date(2025, 0, 6, 9, 41) },
  extra: Partial<PhoneUiHost> = {},
) {
  const settings = new Map<string, string>();
  const host: PhoneUiHost = {
    ...extra,
    launcherApps: () => [
      { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
      { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
      { package: 'com.example.notes', label: 'Notes', activity: 'com.example.notes.MainActivity' },
    ],
    log: () => undefined,
    setting: (ns, key) => settings.get(`${ns}/${key}`) ?? null,
    setSetting: (ns, key, value) => void settings.set(`${ns}/${key}`, value),
  };
  const ui = createPhoneUi(host, {
    width: 720,
    height: 1280,
    density: 320,
    identity: DEVICE,
    now: () => clock.now,
  });
  return { ui, settings };
}

interface Image {
  width: number;
  height: number;
  rgb(x: number, y: number): number;
}

function decode(buf: Buffer): Image {
  const png = PNG.sync.read(buf);
  return {
    width: png.width,
    height: png.height,
    rgb: (x, y) => {
      const i = (y * png.width + x) * 4;
      return ((png.data[i] ?? 0) << 16) | ((png.data[i + 1] ?? 0) << 8) | (png.data[i + 2] ?? 0);
    },
  };
}

function* nodes(n: UiNodeInfo): Generator<UiNodeInfo> {
  yield n;
  for (const c of n.children) yield* nodes(c);
}

function node(ui: PhoneUi, pred: (n: UiNodeInfo) => boolean): UiNodeInfo {
  const tree = ui.viewTree?.();
  const n = tree && [...nodes(tree)].find(pred);
  if (!n) throw new Error('node not found');
  return n;
}

/** Distinct colours inside a rectangle of the image. */
function colorsIn(img: Image, b: UiNodeInfo['bounds']): Set<number> {
  const out = new Set<number>();
  for (let y = b.top; y < b.bottom; y++) for (let x = b.left; x < b.right; x++) out.add(img.rgb(x, y));
  return out;
}

function tap(ui: PhoneUi, n: UiNodeInfo): void {
  ui.tap((n.bounds.left + n.bounds.right) / 2, (n.bounds.top + n.bounds.bottom) / 2);
}

describe('rendering', () => {
  it('renders a PNG of the screen size with an opaque status bar over apps', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    const img = decode(ui.renderPng());
    expect([img.width, img.height]).toEqual([720, 1280]);
    expect(ui.statusBarHeight).toBe(48);
    // Middle of the status bar: no clock or icons there, only the app's primary colour.
    expect(img.rgb(360, 10)).toBe(COLORS.primary);
    expect(img.rgb(360, 40)).toBe(COLORS.primary);
    // The body below the app bar is the surface colour.
    expect(img.rgb(10, 1000)).toBe(COLORS.surface);
  });

  it('draws the status bar clock, and a new minute is a new picture', () => {
    const clock = { now: new Date(2025, 0, 6, 9, 41) };
    const { ui } = makeUi(clock);
    const clockArea = { left: 0, top: 0, right: 120, bottom: 48 };
    const before = decode(ui.renderPng());
    // The clock draws light text on the wallpaper: more than the background colours.
    expect([...colorsIn(before, clockArea)].some((c) => c === 0xffffff)).toBe(true);
    let calls = 0;
    ui.onChange(() => calls++);
    expect(ui.clockTick?.()).toBe(false);
    expect(calls).toBe(0);
    const v = ui.version;
    clock.now = new Date(2025, 0, 6, 9, 42);
    // Reading the version first must not swallow the tick.
    expect(ui.version).toBeGreaterThan(v);
    expect(ui.clockTick?.()).toBe(true);
    expect(ui.clockTick?.()).toBe(false);
    expect(calls).toBe(1);
    expect(ui.version).toBeGreaterThan(v);
    const after = decode(ui.renderPng());
    let differ = 0;
    for (let y = 0; y < 48; y++)
      for (let x = 0; x < 120; x++) if (before.rgb(x, y) !== after.rgb(x, y)) differ++;
    expect(differ).toBeGreaterThan(10);
  });

  it('draws each launcher icon in its app colour within its bounds', () => {
    const { ui } = makeUi();
    const img = decode(ui.renderPng());
    for (const pkg of ['com.android.settings', 'com.phonelease.login', 'com.example.notes']) {
      const icon = node(ui, (n) => n.key.endsWith(`app/${pkg}`));
      const cx = Math.round((icon.bounds.left + icon.bounds.right) / 2);
      const cy = icon.bounds.top + 16 + 56;
      // Inside the 56 px circle, left of the glyph in its centre.
      expect(img.rgb(cx - 44, cy)).toBe(appColor(pkg));
      // The glyph or initial is white.
      expect(
        colorsIn(img, { left: cx - 20, top: cy - 20, right: cx + 20, bottom: cy + 20 }).has(0xffffff),
      ).toBe(true);
      // Outside the circle: wallpaper, not the app colour.
      expect(img.rgb(icon.bounds.left + 2, icon.bounds.top + 2)).not.toBe(appColor(pkg));
    }
  });

  it('shows the login result text once the button is pressed', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    const result = node(ui, (n) => n.resourceId === 'com.phonelease.login:id/result');
    const empty = decode(ui.renderPng());
    expect([...colorsIn(empty, result.bounds)]).toEqual([COLORS.surface]);

    tap(
      ui,
      node(ui, (n) => n.resourceId === 'com.phonelease.login:id/username'),
    );
    ui.text('demo');
    ui.key(KEYCODE.ENTER);
    ui.text('secret');
    tap(
      ui,
      node(ui, (n) => n.resourceId === 'com.phonelease.login:id/login'),
    );
    const done = decode(ui.renderPng());
    const colors = colorsIn(done, result.bounds);
    expect(colors.has(COLORS.success)).toBe(true);
    expect(colors.has(COLORS.error)).toBe(false);
  });

  it('highlights the focused field with the primary colour', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    const field = node(ui, (n) => n.resourceId === 'com.phonelease.login:id/username');
    const midY = Math.round((field.bounds.top + field.bounds.bottom) / 2);
    expect(decode(ui.renderPng()).rgb(field.bounds.left, midY)).not.toBe(COLORS.primary);
    tap(ui, field);
    expect(decode(ui.renderPng()).rgb(field.bounds.left + 1, midY)).toBe(COLORS.primary);
  });

  it('switches to the dark palette when Dark theme is turned on in Settings', () => {
    const { ui, settings } = makeUi();
    ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity');
    const light = decode(ui.renderPng());
    expect(light.rgb(360, 1000)).toBe(COLORS.surfaceContainer);
    tap(
      ui,
      node(ui, (n) => n.text === 'Dark theme'),
    );
    expect(settings.get('secure/ui_night_mode')).toBe('2');
    const dark = decode(ui.renderPng());
    expect(dark.rgb(360, 1000)).toBe(DARK_COLORS.surfaceContainer);
    // Status bar text turns light on the dark bar: white-ish clock pixels appear.
    expect([...colorsIn(dark, { left: 0, top: 0, right: 120, bottom: 48 })].some((c) => c === 0xffffff)).toBe(
      true,
    );
    ui.launch('com.phonelease.login');
    const login = decode(ui.renderPng());
    expect(login.rgb(360, 10)).toBe(DARK_COLORS.primary);
    expect(login.rgb(10, 1000)).toBe(DARK_COLORS.surface);
  });

  it('caches the PNG until something changes', () => {
    const { ui } = makeUi();
    const a = ui.renderPng();
    expect(ui.renderPng()).toBe(a);
    ui.launch('com.android.settings');
    const b = ui.renderPng();
    expect(b).not.toBe(a);
    expect(b.equals(a)).toBe(false);
  });

  it('moves the Settings list on screen when it scrolls', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings');
    const before = decode(ui.renderPng());
    ui.swipe(360, 1000, 360, 700, 300);
    const after = decode(ui.renderPng());
    let differ = 0;
    for (let y = 400; y < 1100; y += 4)
      for (let x = 0; x < 720; x += 4) if (before.rgb(x, y) !== after.rgb(x, y)) differ++;
    expect(differ).toBeGreaterThan(500);
    // The app bar above the list stays put.
    for (let x = 0; x < 720; x += 8) expect(after.rgb(x, 100)).toBe(before.rgb(x, 100));
  });
});

describe('toasts', () => {
  /** About phone, its Build number tapped `taps` times (the third tap on shows a toast). */
  function aboutPhone(taps: number) {
    const made = makeUi(undefined, { lockKind: () => 'swipe' });
    made.ui.launch('com.android.settings', 'com.android.settings.Settings$MyDeviceInfoActivity');
    const buildNumber = () => node(made.ui, (n) => n.text === 'Build number');
    for (let i = 0; i < taps; i++) tap(made.ui, buildNumber());
    return made.ui;
  }

  it('draws a toast over the app, but not over the lock screen', () => {
    const toasted = aboutPhone(3);
    const plain = aboutPhone(2);
    // The same screen, but for the toast above the navigation bar.
    const band = (ui: PhoneUi) => {
      const img = decode(ui.renderPng());
      return Array.from({ length: 720 }, (_, x) => img.rgb(x, 1280 - 96 - 48 - 20));
    };
    expect(band(toasted)).not.toEqual(band(plain));
    // Locked: the keyguard occludes the app, and its toast with it.
    for (const ui of [toasted, plain]) {
      ui.key(KEYCODE.POWER);
      ui.key(KEYCODE.WAKEUP);
      expect(ui.powerState?.()).toMatchObject({ awake: true, keyguard: true });
    }
    expect(toasted.renderPng().equals(plain.renderPng())).toBe(true);
  });
});

describe('font and rasteriser', () => {
  it('has a glyph for every printable ASCII character', () => {
    const missing: string[] = [];
    for (let c = 32; c <= 126; c++)
      if (!hasGlyph(String.fromCharCode(c))) missing.push(String.fromCharCode(c));
    expect(missing).toEqual([]);
  });

  it('spaces glyphs proportionally and ellipsizes to fit', () => {
    const t = new TextRenderer();
    const style = { scale: 2 };
    expect(t.measure('iiii', style)).toBeLessThan(t.measure('WWWW', style));
    const cut = t.ellipsize('Notification history, conversations', style, 150);
    expect(cut.endsWith('\u2026')).toBe(true);
    expect(t.measure(cut, style)).toBeLessThanOrEqual(150);
  });

  it('draws text ink inside its measured box only', () => {
    const t = new TextRenderer();
    const c = new Canvas(200, 60);
    c.fill(0xffffff);
    const style = { scale: 2, color: 0x000000 };
    const w = t.draw(c, 'Hello', 10, 10, style);
    let inkLeft = 200;
    let inkRight = 0;
    for (let y = 0; y < 60; y++)
      for (let x = 0; x < 200; x++)
        if (c.getPixel(x, y) !== 0xffffff) {
          inkLeft = Math.min(inkLeft, x);
          inkRight = Math.max(inkRight, x);
        }
    expect(inkLeft).toBeGreaterThanOrEqual(10);
    expect(inkRight).toBeLessThan(10 + w);
    expect(inkRight - inkLeft).toBeGreaterThan(w * 0.8);
  });

  it('anti-aliases curved edges and clips to the clip rectangle', () => {
    const c = new Canvas(100, 100);
    c.fill(0xffffff);
    c.pushClip({ left: 0, top: 0, right: 50, bottom: 100 });
    c.fillCircle(50, 50, 30, 0x000000);
    c.popClip();
    expect(c.getPixel(40, 50)).toBe(0x000000);
    expect(c.getPixel(60, 50)).toBe(0xffffff);
    const edge = new Set<number>();
    for (let y = 0; y < 100; y++) for (let x = 0; x < 50; x++) edge.add(c.getPixel(x, y));
    // Partial coverage on the rim gives grey levels between black and white.
    expect(edge.size).toBeGreaterThan(5);
  });
});

describe('display list', () => {
  it('redraws only what changed, into the pixels a whole drawing gives, screen after screen', () => {
    const clock = { now: new Date(2025, 0, 6, 9, 41) };
    const { ui } = makeUi(clock);
    const player = new DisplayListPlayer(new Canvas(ui.width, ui.height), new TextRenderer());
    const area = (r: { left: number; top: number; right: number; bottom: number } | null) =>
      r ? (r.right - r.left) * (r.bottom - r.top) : 0;
    const steps: Array<[string, () => void]> = [
      ['the launcher', () => undefined],
      ['a new minute', () => (clock.now = new Date(2025, 0, 6, 9, 42))],
      ['the Login app', () => ui.launch('com.phonelease.login')],
      [
        'a focused field',
        () =>
          tap(
            ui,
            node(ui, (n) => n.resourceId === 'com.phonelease.login:id/username'),
          ),
      ],
      ['a typed character', () => ui.text('d')],
      ['more characters', () => ui.text('emo')],
      ['a deleted character', () => ui.key(KEYCODE.DEL)],
      ['Settings', () => ui.launch('com.android.settings')],
      ['a scrolled list', () => ui.swipe(360, 1000, 360, 600, 300)],
      [
        'a toggled switch',
        () => ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity'),
      ],
      [
        'the dark theme',
        () =>
          tap(
            ui,
            node(ui, (n) => n.text === 'Dark theme'),
          ),
      ],
      ['home', () => ui.key(KEYCODE.HOME)],
      ['nothing', () => undefined],
    ];
    const drawn = new Map<string, number>();
    for (const [name, step] of steps) {
      step();
      drawn.set(name, area(player.draw(ui.displayList!())));
      // Bit for bit what the phone draws for screencap (a whole drawing each version).
      expect(Buffer.compare(player.canvas.data, ui.renderRgba()), name).toBe(0);
    }
    const screen = ui.width * ui.height;
    expect(drawn.get('the launcher')).toBe(screen);
    expect(drawn.get('nothing')).toBe(0);
    // A character is a few glyphs' worth of pixels, not the screen.
    expect(drawn.get('a typed character')).toBeLessThan(screen / 10);
    expect(drawn.get('a new minute')).toBeLessThan(screen / 10);
  });

  it('shows a whole screen it kept again by copying its pixels, not drawing it: the same pixels', () => {
    const { ui } = makeUi();
    // Counts the drawing calls that reach the canvas.
    class CountingCanvas extends Canvas {
      calls = 0;
      override fillRect(...args: Parameters<Canvas['fillRect']>): void {
        this.calls++;
        super.fillRect(...args);
      }
    }
    const canvas = new CountingCanvas(ui.width, ui.height);
    const player = new DisplayListPlayer(canvas, new TextRenderer(), 3);
    const show = (name: string) => {
      const before = canvas.calls;
      player.draw(ui.displayList!());
      expect(Buffer.compare(canvas.data, ui.renderRgba()), name).toBe(0);
      return canvas.calls - before;
    };
    expect(show('the launcher')).toBeGreaterThan(0);
    ui.launch('com.phonelease.login');
    expect(show('the Login app')).toBeGreaterThan(0);
    tap(
      ui,
      node(ui, (n) => n.resourceId === 'com.phonelease.login:id/username'),
    );
    ui.text('d');
    expect(show('a typed character')).toBeGreaterThan(0);
    ui.launch('com.android.settings');
    expect(show('Settings')).toBeGreaterThan(0);
    ui.key(KEYCODE.HOME);
    expect(show('the launcher again')).toBe(0);
    ui.launch('com.android.settings');
    expect(show('Settings again')).toBe(0);
    // A screen never shown whole before is drawn.
    ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity');
    expect(show('Display settings')).toBeGreaterThan(0);
  });
});
