/**
 * The UiAutomator2 server's window, display and pinch routes over HTTP, as Appium's
 * `mobile: listWindows`, `mobile: listDisplays` and `mobile: pinchOpenGesture` /
 * `pinchCloseGesture` call them.
 */
import net from 'node:net';
import { PNG } from 'pngjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPhoneUi } from '../../server/devices/virtual/ui/index.js';
import type { PhoneUi, PhoneUiHost, UiAutomator2Server } from '../../server/devices/virtual/ui/types.js';
import { KEYCODE } from '../../server/devices/virtual/ui/types.js';
import { createUiAutomator2Server, ELEMENT_KEY } from '../../server/devices/virtual/uia2/index.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

let ui: PhoneUi;
let uia2: UiAutomator2Server;
let tcp: net.Server;
let base: string;

beforeEach(async () => {
  const host: PhoneUiHost = {
    launcherApps: () => [
      { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
      { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
    ],
    log: () => undefined,
    setting: () => null,
    lockKind: () => 'swipe',
  };
  ui = createPhoneUi(host, { width: 720, height: 1280, density: 320, identity: DEVICE });
  const labels: Record<string, string> = {
    'com.android.settings': 'Settings',
    'com.phonelease.login': 'Login',
  };
  uia2 = createUiAutomator2Server(ui, { identity: DEVICE, appLabel: (pkg) => labels[pkg] ?? null });
  tcp = net.createServer((socket) => uia2.handleConnection(socket));
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(tcp.address() as net.AddressInfo).port}`;
});

afterEach(async () => {
  uia2.close();
  await new Promise<void>((resolve) => tcp.close(() => resolve()));
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; value: any }> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, value: ((await res.json()) as { value: unknown }).value };
}

async function session(): Promise<string> {
  const res = await fetch(`${base}/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android' } } }),
  });
  return ((await res.json()) as { sessionId: string }).sessionId;
}

describe('mobile: listWindows', () => {
  it('lists the app in front and the system bars as AccessibilityWindowInfo describes them', async () => {
    const sid = await session();
    ui.launch('com.phonelease.login');
    const { status, value } = await call('POST', `/session/${sid}/appium/list_windows`, {});
    expect(status).toBe(200);
    expect(value).toHaveLength(3);
    const app = value.find((w: any) => w.type === 1);
    expect(app).toMatchObject({
      displayId: 0,
      physicalDisplayId: '4619827259835644672',
      packageName: 'com.phonelease.login',
      title: 'Login',
      rect: { x: 0, y: 0, width: 720, height: 1280 },
      isActive: true,
      isFocused: true,
      isInPictureInPictureMode: false,
    });
    const bars = value.filter((w: any) => w.type === 3);
    expect(bars.map((w: any) => [w.title, w.packageName, w.rect])).toEqual([
      ['Navigation bar', 'com.android.systemui', { x: 0, y: 1184, width: 720, height: 96 }],
      ['Status bar', 'com.android.systemui', { x: 0, y: 0, width: 720, height: 48 }],
    ]);
    // API 34 takes a screenshot of every window: the window's own area of the screen.
    const shot = PNG.sync.read(Buffer.from(bars[1].screenshot, 'base64'));
    expect([shot.width, shot.height]).toEqual([720, 48]);
    const screen = PNG.sync.read(ui.renderPng());
    expect(shot.data.subarray(0, 720 * 4 * 48)).toEqual(screen.data.subarray(0, 720 * 4 * 48));
    // Window ids stay put while the windows do, and the top-most has the highest layer.
    const again = (await call('POST', `/session/${sid}/appium/list_windows`, {})).value;
    expect(again.map((w: any) => w.windowId)).toEqual(value.map((w: any) => w.windowId));
    expect(Math.max(...bars.map((w: any) => w.layer))).toBeGreaterThan(app.layer);
  });

  it('filters as the server does: globs, numbers and booleans given as strings, all must match', async () => {
    const sid = await session();
    ui.launch('com.android.settings');
    const list = async (filters: Record<string, unknown>) =>
      (
        await call('POST', `/session/${sid}/appium/list_windows`, { filters, skipScreenshots: true })
      ).value.map((w: any) => w.title);
    expect(await list({ packageName: 'com.android.*' })).toEqual([
      'Navigation bar',
      'Status bar',
      'Settings',
    ]);
    expect(await list({ packageName: 'com.android.systemui', title: 'Status ba?' })).toEqual(['Status bar']);
    expect(await list({ type: '1' })).toEqual(['Settings']);
    expect(await list({ isActive: 'false' })).toEqual(['Navigation bar', 'Status bar']);
    expect(await list({ isFocused: true, type: 3 })).toEqual([]);
    // A filter the server does not know excludes nothing; a null one is ignored.
    expect(await list({ color: 'blue', title: null })).toHaveLength(3);
    const skipped = (await call('POST', `/session/${sid}/appium/list_windows`, { skipScreenshots: true }))
      .value;
    expect(skipped.every((w: any) => w.screenshot === null)).toBe(true);
  });

  it("names the lock screen as SystemUI's notification shade", async () => {
    const sid = await session();
    ui.key(KEYCODE.SLEEP);
    ui.key(KEYCODE.WAKEUP);
    expect(ui.powerState?.()).toMatchObject({ awake: true, keyguard: true });
    const windows = (await call('POST', `/session/${sid}/appium/list_windows`, { skipScreenshots: true }))
      .value;
    const front = windows.find((w: any) => w.isActive);
    expect(front).toMatchObject({
      packageName: 'com.android.systemui',
      type: 3,
      title: 'Notification shade',
    });
  });
});

describe('mobile: listDisplays', () => {
  it('describes the built-in display with its DisplayMetrics', async () => {
    const sid = await session();
    const { value } = await call('POST', `/session/${sid}/appium/list_displays`, {});
    expect(value).toEqual([
      {
        id: 0,
        name: 'Built-in Screen',
        physicalId: '4619827259835644672',
        virtualId: null,
        metrics: {
          widthPixels: 720,
          heightPixels: 1280,
          density: 2,
          densityDpi: 320,
          scaledDensity: 2,
          xdpi: 320,
          ydpi: 320,
        },
        isDefault: true,
      },
    ]);
  });
});

describe('mobile: pinchOpenGesture / pinchCloseGesture', () => {
  it('pinches an element or an area, and refuses what UiObject2 refuses', async () => {
    const sid = await session();
    ui.launch('com.android.settings');
    const found = await call('POST', `/session/${sid}/element`, {
      strategy: 'class name',
      selector: 'androidx.recyclerview.widget.RecyclerView',
    });
    const origin = { [ELEMENT_KEY]: found.value[ELEMENT_KEY] };
    const before = ui.dumpHierarchy();
    expect(
      (await call('POST', `/session/${sid}/appium/gestures/pinch_open`, { origin, percent: 0.5 })).status,
    ).toBe(200);
    expect(
      (
        await call('POST', `/session/${sid}/appium/gestures/pinch_close`, {
          area: { left: 0, top: 300, width: 720, height: 600 },
          percent: 1,
          speed: 1000,
        })
      ).status,
    ).toBe(200);
    // Settings' list does not zoom: a pinch changes nothing on it, as on a phone.
    expect(ui.dumpHierarchy()).toBe(before);

    const refused = async (body: unknown) => {
      const r = await call('POST', `/session/${sid}/appium/gestures/pinch_open`, body);
      expect(r.status).toBe(400);
      return r.value.message as string;
    };
    expect(await refused({ origin })).toBe(
      "java.lang.IllegalArgumentException: PinchModel: The mandatory field 'percent' is not present in JSON",
    );
    expect(await refused({ percent: 0.5 })).toBe(
      'The pinch area coordinates must be provided if element is not set',
    );
    expect(await refused({ origin, percent: 1.5 })).toBe('Percent must be between 0.0f and 1.0f');
    expect(await refused({ origin, percent: 0.5, speed: -1 })).toBe('Speed cannot be negative');
  });
});
