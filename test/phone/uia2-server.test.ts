import net from 'node:net';
import { Duplex } from 'node:stream';
import { PNG } from 'pngjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPhoneUi } from '../../server/devices/virtual/ui/index.js';
import type {
  DisplaySize,
  PhoneUi,
  PhoneUiHost,
  Rotation,
  UiAutomator2Server,
} from '../../server/devices/virtual/ui/types.js';
import { socketPair } from '../../server/devices/virtual/local-socket.js';
import { createUiAutomator2Server, ELEMENT_KEY } from '../../server/devices/virtual/uia2/index.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

const identity = DEVICE;

interface Harness {
  ui: PhoneUi;
  uia2: UiAutomator2Server;
  base: string;
  logs: string[];
  tcp: net.Server;
  /** The phone's settings (`namespace/key`), as the UI reads and writes them. */
  settings: Map<string, string>;
  /** The UI's clock, which a test moves on. */
  clock: { ms: number };
  /** The rotations the server froze (UiAutomation.setRotation), in order. */
  rotations: Rotation[];
  /** The display as the window manager sizes it (what `wm size` and `wm density` force). */
  display: DisplaySize;
}

let h: Harness;

beforeEach(async () => {
  const logs: string[] = [];
  const settings = new Map<string, string>();
  const clock = { ms: new Date(2025, 0, 6, 9, 41).getTime() };
  const rotations: Rotation[] = [];
  const display: DisplaySize = { width: 720, height: 1280, density: 320 };
  const host: PhoneUiHost = {
    launcherApps: () => [
      { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
      { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
    ],
    log: (p, tag, msg) => logs.push(`${p} ${tag}: ${msg}`),
    setting: (ns, key) => settings.get(`${ns}/${key}`) ?? null,
    setSetting: (ns, key, value) => void settings.set(`${ns}/${key}`, value),
    display: () => display,
  };
  const ui = createPhoneUi(host, {
    width: 720,
    height: 1280,
    density: 320,
    identity,
    now: () => new Date(clock.ms),
  });
  const uia2 = createUiAutomator2Server(ui, {
    identity,
    log: (p, tag, msg) => logs.push(`${p} ${tag}: ${msg}`),
    // The rotation lock, as the phone keeps it in Settings.System.
    rotate: (rotation) => {
      rotations.push(rotation);
      settings.set('system/user_rotation', String(rotation));
      settings.set('system/accelerometer_rotation', '0');
      ui.settingsChanged?.();
    },
  });
  // The system side forwards adb tcp:6790 streams the same way: each connection goes in whole.
  const tcp = net.createServer((socket) => uia2.handleConnection(socket));
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const { port } = tcp.address() as net.AddressInfo;
  h = { ui, uia2, base: `http://127.0.0.1:${port}`, logs, tcp, settings, clock, rotations, display };
});

afterEach(async () => {
  h.uia2.close();
  await new Promise<void>((resolve) => h.tcp.close(() => resolve()));
});

interface Reply {
  status: number;
  body: { sessionId?: string | null; value: unknown };
}

async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(h.base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

async function newSession(): Promise<string> {
  const r = await call('POST', '/session', {
    capabilities: {
      firstMatch: [{ platformName: 'Android', 'appium:automationName': 'UiAutomator2' }],
      alwaysMatch: {},
    },
  });
  expect(r.status).toBe(200);
  const id = r.body.sessionId;
  if (typeof id !== 'string') throw new Error('no session id');
  return id;
}

async function find(sid: string, strategy: string, selector: string, multiple = false): Promise<Reply> {
  return call('POST', `/session/${sid}/element${multiple ? 's' : ''}`, {
    strategy,
    selector,
    context: '',
    multiple,
  });
}

function elementId(r: Reply): string {
  const v = r.body.value as Record<string, string>;
  const id = v[ELEMENT_KEY];
  if (!id) throw new Error(`not an element: ${JSON.stringify(r.body)}`);
  expect(v.ELEMENT).toBe(id);
  return id;
}

/** W3C actions of one finger (a touch pointer). */
function finger(actions: Record<string, unknown>[]) {
  return { actions: [{ type: 'pointer', id: 'finger1', parameters: { pointerType: 'touch' }, actions }] };
}

describe('UiAutomator2 server over HTTP', () => {
  it('answers status, sessions and session creation like the real server', async () => {
    expect((await call('GET', '/status')).body.value).toMatchObject({ ready: true });
    expect((await call('GET', '/sessions')).body.value).toEqual([]);
    const sid = await newSession();
    const sessions = await call('GET', '/sessions');
    expect(sessions.body.value).toEqual([
      { id: sid, capabilities: { platformName: 'Android', 'appium:automationName': 'UiAutomator2' } },
    ]);
    const got = await call('GET', `/session/${sid}`);
    expect(got.body.value).toMatchObject({ platformName: 'Android' });
    expect((await call('DELETE', `/session/${sid}`)).status).toBe(200);
    const gone = await call('GET', `/session/${sid}/source`);
    expect(gone.status).toBe(404);
    expect(gone.body.value).toMatchObject({ error: 'invalid session id' });
  });

  it('forgets a connection it closed itself, even while the client keeps its side open', async () => {
    const [client, server] = socketPair();
    h.uia2.handleConnection(server);
    const open = () => (h.uia2 as unknown as { sockets: Set<unknown> }).sockets.size;
    expect(open()).toBe(1);
    let reply = '';
    client.on('data', (c: Buffer) => (reply += c.toString()));
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    client.write('GET /status HTTP/1.1\r\nHost: device\r\nConnection: close\r\n\r\n');
    // The server answers and ends the connection; the client never ends its side.
    await ended;
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(open()).toBe(0);
    client.destroy();
  });

  it('reports the device details the driver reads at session start', async () => {
    const sid = await newSession();
    expect((await call('GET', `/session/${sid}/appium/device/pixel_ratio`)).body.value).toBe(2);
    const bars = (await call('GET', `/session/${sid}/appium/device/system_bars`)).body.value as {
      statusBar: unknown;
    };
    expect(bars.statusBar).toBe(48);
    expect((await call('GET', `/session/${sid}/window/current/size`)).body.value).toEqual({
      width: 720,
      height: 1280,
    });
    expect((await call('GET', `/session/${sid}/window/rect`)).body.value).toEqual({
      x: 0,
      y: 0,
      width: 720,
      height: 1280,
    });
    expect((await call('GET', `/session/${sid}/appium/device/info`)).body.value).toMatchObject({
      apiVersion: '34',
      platformVersion: '14',
      manufacturer: 'Google',
      model: 'Pixel 8',
      realDisplaySize: '720x1280',
      displayDensity: 320,
    });
  });

  it('reports the display as `wm size` and `wm density` force it, the panel’s dpi aside', async () => {
    const sid = await newSession();
    Object.assign(h.display, { width: 1080, height: 1920, density: 480 });
    h.ui.settingsChanged?.();
    expect((await call('GET', `/session/${sid}/appium/device/pixel_ratio`)).body.value).toBe(3);
    expect((await call('GET', `/session/${sid}/appium/device/display_density`)).body.value).toBe(480);
    const bars = (await call('GET', `/session/${sid}/appium/device/system_bars`)).body.value as {
      statusBar: unknown;
    };
    expect(bars.statusBar).toBe(72);
    expect((await call('GET', `/session/${sid}/window/current/size`)).body.value).toEqual({
      width: 1080,
      height: 1920,
    });
    expect((await call('GET', `/session/${sid}/appium/device/info`)).body.value).toMatchObject({
      realDisplaySize: '1080x1920',
      displayDensity: 480,
    });
    const displays = (await call('POST', `/session/${sid}/appium/list_displays`, {})).body.value as {
      metrics: Record<string, number>;
    }[];
    expect(displays[0]!.metrics).toMatchObject({ widthPixels: 1080, densityDpi: 480, xdpi: 320 });
  });

  it('logs in through the login app: find by each strategy, send keys, click, read the result', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const user = elementId(await find(sid, 'id', 'com.phonelease.login:id/username'));
    // Short ids resolve against the app in front.
    expect(elementId(await find(sid, 'id', 'username'))).toBe(user);
    const pass = elementId(await find(sid, 'accessibility id', 'password'));
    const button = elementId(await find(sid, '-android uiautomator', 'new UiSelector().text("Log in")'));
    expect(elementId(await find(sid, 'xpath', '//android.widget.Button[@content-desc="login"]'))).toBe(
      button,
    );
    expect(elementId(await find(sid, 'class name', 'android.widget.Button'))).toBe(button);

    expect(
      (await call('POST', `/session/${sid}/element/${user}/value`, { text: 'demo', replace: false })).status,
    ).toBe(200);
    expect((await call('POST', `/session/${sid}/element/${pass}/value`, { text: 'secret' })).status).toBe(
      200,
    );
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('demo');
    expect((await call('GET', `/session/${sid}/element/${pass}/text`)).body.value).toBe('\u2022'.repeat(6));
    expect((await call('GET', `/session/${sid}/element/${pass}/attribute/password`)).body.value).toBe('true');
    expect((await call('POST', `/session/${sid}/element/${button}/click`, {})).status).toBe(200);

    const result = elementId(await find(sid, 'id', 'com.phonelease.login:id/result'));
    expect((await call('GET', `/session/${sid}/element/${result}/text`)).body.value).toBe('Welcome, demo!');
    expect(h.logs).toContain('I PhoneleaseLogin: login attempt user=demo result=success');
  });

  it('clears fields and appends on repeated sends', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const user = elementId(await find(sid, 'id', 'username'));
    await call('POST', `/session/${sid}/element/${user}/value`, { text: 'de' });
    await call('POST', `/session/${sid}/element/${user}/value`, { value: ['m', 'o'] });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('demo');
    expect((await call('GET', `/session/${sid}/element/${user}/attribute/focused`)).body.value).toBe('true');
    // Typing leaves the cursor at the end: the selection is empty there.
    for (const name of ['selection-start', 'selection-end'])
      expect((await call('GET', `/session/${sid}/element/${user}/attribute/${name}`)).body.value).toBe('4');
    await call('POST', `/session/${sid}/element/${user}/clear`, {});
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('');
  });

  it('answers element queries: attributes, rect, displayed, enabled, name', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const button = elementId(await find(sid, 'accessibility id', 'login'));
    const rect = (await call('GET', `/session/${sid}/element/${button}/rect`)).body.value as {
      x: number;
      y: number;
      width: number;
      height: number;
    };
    const bounds = (await call('GET', `/session/${sid}/element/${button}/attribute/bounds`)).body.value;
    expect(bounds).toBe(`[${rect.x},${rect.y}][${rect.x + rect.width},${rect.y + rect.height}]`);
    expect((await call('GET', `/session/${sid}/element/${button}/location`)).body.value).toEqual({
      x: rect.x,
      y: rect.y,
    });
    expect((await call('GET', `/session/${sid}/element/${button}/size`)).body.value).toEqual({
      width: rect.width,
      height: rect.height,
    });
    expect((await call('GET', `/session/${sid}/element/${button}/displayed`)).body.value).toBe(true);
    expect((await call('GET', `/session/${sid}/element/${button}/enabled`)).body.value).toBe(true);
    expect((await call('GET', `/session/${sid}/element/${button}/selected`)).body.value).toBe(false);
    expect((await call('GET', `/session/${sid}/element/${button}/name`)).body.value).toBe(
      'android.widget.Button',
    );
    expect((await call('GET', `/session/${sid}/element/${button}/attribute/resource-id`)).body.value).toBe(
      'com.phonelease.login:id/login',
    );
    expect((await call('GET', `/session/${sid}/element/${button}/attribute/content-desc`)).body.value).toBe(
      'login',
    );
    expect((await call('GET', `/session/${sid}/element/${button}/attribute/class`)).body.value).toBe(
      'android.widget.Button',
    );
    expect((await call('GET', `/session/${sid}/element/${button}/attribute/clickable`)).body.value).toBe(
      'true',
    );
    // A name the server does not answer: its NoSuchAttributeException, listing those it does.
    const bad = await call('GET', `/session/${sid}/element/${button}/attribute/colour`);
    expect(bad.status).toBe(404);
    expect(bad.body.value).toMatchObject({ error: 'unknown command' });
    expect((bad.body.value as { message: string }).message).toMatch(
      /^'colour' attribute is unknown for the element\. Only the following attributes are supported: \[checkable, .*selection-start, selection-end/,
    );
    // A button has no text selection; extras are empty.
    expect(
      (await call('GET', `/session/${sid}/element/${button}/attribute/selection-start`)).body.value,
    ).toBeNull();
    expect((await call('GET', `/session/${sid}/element/${button}/attribute/extras`)).body.value).toBeNull();
    const shot = (await call('GET', `/session/${sid}/element/${button}/screenshot`)).body.value as string;
    const png = PNG.sync.read(Buffer.from(shot, 'base64'));
    expect([png.width, png.height]).toEqual([rect.width, rect.height]);
  });

  it('returns the page source with class-named tags and a decodable screenshot', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const source = (await call('GET', `/session/${sid}/source`)).body.value as string;
    expect(
      source.startsWith(
        '<?xml version=\'1.0\' encoding=\'UTF-8\' standalone=\'yes\' ?>\n<hierarchy index="0" class="hierarchy" rotation="0" width="720" height="1280">',
      ),
    ).toBe(true);
    expect(source).toMatch(
      /<android\.widget\.EditText index="\d+" package="com\.phonelease\.login" class="android\.widget\.EditText" text="" resource-id="com\.phonelease\.login:id\/username" content-desc="username" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" long-clickable="true" password="false" scrollable="false" selected="false" bounds="\[\d+,\d+\]\[\d+,\d+\]" displayed="true" hint="Username" \/>/,
    );
    const shot = (await call('GET', `/session/${sid}/screenshot`)).body.value as string;
    const png = PNG.sync.read(Buffer.from(shot, 'base64'));
    expect([png.width, png.height]).toEqual([720, 1280]);
  });

  it('uses W3C errors: no such element, stale element, unknown command, invalid selector', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const missing = await find(sid, 'id', 'nope');
    expect(missing.status).toBe(404);
    expect(missing.body.value).toMatchObject({ error: 'no such element' });
    expect(typeof (missing.body.value as { stacktrace: unknown }).stacktrace).toBe('string');
    // Multiple finds answer an empty list rather than an error (isExisting() relies on it).
    const none = await find(sid, 'id', 'nope', true);
    expect(none.status).toBe(200);
    expect(none.body.value).toEqual([]);

    const user = elementId(await find(sid, 'id', 'username'));
    h.ui.forceStop('com.phonelease.login');
    const stale = await call('GET', `/session/${sid}/element/${user}/text`);
    expect(stale.status).toBe(404);
    expect(stale.body.value).toMatchObject({ error: 'stale element reference' });
    const unknownEl = await call('GET', `/session/${sid}/element/not-an-id/text`);
    expect(unknownEl.status).toBe(404);
    expect(unknownEl.body.value).toMatchObject({ error: 'no such element' });

    const unknown = await call('POST', `/session/${sid}/appium/teleport`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.value).toMatchObject({ error: 'unknown command' });
    expect((unknown.body.value as { message: string }).message).toContain('POST /session/');
    expect(
      h.logs.some((l) => l.startsWith('W AppiumUiAutomator2Server:') && l.includes('/appium/teleport')),
    ).toBe(true);

    const badXpath = await find(sid, 'xpath', '//*[@text=');
    expect(badXpath.status).toBe(400);
    expect(badXpath.body.value).toMatchObject({ error: 'invalid selector' });
    const badSelector = await find(sid, '-android uiautomator', 'new UiSelector().colour("red")');
    expect(badSelector.status).toBe(400);
    expect(badSelector.body.value).toMatchObject({ error: 'invalid selector' });
    const badJson = await fetch(`${h.base}/session/${sid}/element`, { method: 'POST', body: '{nope' });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { value: { error: string } }).value.error).toBe('invalid argument');
  });

  it('finds inside an element, and keeps the same id for the same view', async () => {
    h.ui.launch('com.android.settings');
    const sid = await newSession();
    const list = elementId(await find(sid, 'id', 'com.android.settings:id/recycler_view'));
    const titles = await call('POST', `/session/${sid}/element/${list}/elements`, {
      strategy: 'id',
      selector: 'android:id/title',
    });
    expect((titles.body.value as unknown[]).length).toBeGreaterThan(3);
    const first = (titles.body.value as Array<Record<string, string>>)[0]?.[ELEMENT_KEY];
    expect((await call('GET', `/session/${sid}/element/${first}/text`)).body.value).toBe(
      'Network & internet',
    );
    const again = elementId(
      await find(sid, '-android uiautomator', 'new UiSelector().resourceId("android:id/title").instance(0)'),
    );
    expect(again).toBe(first);
    // Context given in the find body (what the driver sends) works the same way.
    const ctx = await call('POST', `/session/${sid}/elements`, {
      strategy: 'class name',
      selector: 'android.widget.TextView',
      context: list,
      multiple: true,
    });
    expect((ctx.body.value as unknown[]).length).toBeGreaterThan(3);
  });

  it('scrolls with UiScrollable and with W3C pointer actions', async () => {
    h.ui.launch('com.android.settings');
    const sid = await newSession();
    expect((await find(sid, 'accessibility id', 'nothing')).status).toBe(404);
    const about = await find(
      sid,
      '-android uiautomator',
      'new UiScrollable(new UiSelector().scrollable(true)).scrollIntoView(new UiSelector().text("About phone"))',
    );
    expect(about.status).toBe(200);
    await call('POST', `/session/${sid}/element/${elementId(about)}/click`, {});
    expect(h.ui.foreground().activity).toBe('com.android.settings.SubSettings');
    expect((await find(sid, '-android uiautomator', 'new UiSelector().text("Pixel 8")')).status).toBe(200);
    await call('POST', `/session/${sid}/back`, {});
    expect(h.ui.foreground().activity).toBe('com.android.settings.Settings');

    // Swipe the list back down with a W3C pointer: Network & internet comes back.
    const swipe = (y1: number, y2: number) =>
      finger([
        { type: 'pointerMove', duration: 0, x: 360, y: y1 },
        { type: 'pointerDown', button: 0 },
        { type: 'pointerMove', duration: 300, x: 360, y: y2 },
        { type: 'pointerUp', button: 0 },
      ]);
    for (let i = 0; i < 6; i++) await call('POST', `/session/${sid}/actions`, swipe(400, 1100));
    const network = await find(sid, 'xpath', "//*[@text='Network & internet']");
    expect(network.status).toBe(200);
    // A pointer that goes down and up in place is a tap.
    const rect = (await call('GET', `/session/${sid}/element/${elementId(network)}/rect`)).body.value as {
      x: number;
      y: number;
      width: number;
      height: number;
    };
    await call('POST', `/session/${sid}/actions`, {
      actions: [
        {
          type: 'pointer',
          id: 'finger1',
          actions: [
            { type: 'pointerMove', x: rect.x + 10, y: rect.y + 10 },
            { type: 'pointerDown' },
            { type: 'pause', duration: 50 },
            { type: 'pointerUp' },
          ],
        },
      ],
    });
    expect((await find(sid, 'accessibility id', 'Navigate up')).status).toBe(200);
  });

  it('scrolls to a locator (mobile: scroll) and back to a found element (mobile: scrollBackTo)', async () => {
    h.ui.launch('com.android.settings');
    const sid = await newSession();
    const network = elementId(await find(sid, 'xpath', "//*[@text='Network & internet']"));
    const scrolled = await call('POST', `/session/${sid}/gestures/scroll_to`, {
      params: { strategy: 'xpath', selector: "//*[@text='About phone']", maxSwipes: 10 },
    });
    expect(scrolled.status).toBe(200);
    expect((await find(sid, 'xpath', "//*[@text='About phone']")).status).toBe(200);
    // The first row scrolled away: its element is stale until it comes back.
    expect((await call('GET', `/session/${sid}/element/${network}/text`)).body.value).toMatchObject({
      error: 'stale element reference',
    });
    const list = elementId(await find(sid, 'id', 'com.android.settings:id/recycler_view'));
    expect(
      (await call('POST', `/session/${sid}/appium/element/${list}/scroll_to/${network}`, {})).status,
    ).toBe(200);
    expect((await call('GET', `/session/${sid}/element/${network}/text`)).body.value).toBe(
      'Network & internet',
    );
    const missing = await call('POST', `/session/${sid}/gestures/scroll_to`, {
      params: { strategy: 'accessibility id', selector: 'Nowhere', maxSwipes: 3 },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.value).toMatchObject({ error: 'no such element' });
  });

  it('performs the mobile: gestures in the shapes the driver sends', async () => {
    h.ui.launch('com.android.settings');
    const sid = await newSession();
    const displayVisible = async () =>
      (await find(sid, '-android uiautomator', 'new UiSelector().text("Display")', true)).body
        .value as unknown[];
    expect(await displayVisible()).toEqual([]);
    // scrollGesture: direction is where the content goes; true while more remains.
    const more = await call('POST', `/session/${sid}/appium/gestures/scroll`, {
      area: { left: 0, top: 300, width: 720, height: 800 },
      direction: 'down',
      percent: 1,
    });
    expect(more.body.value).toBe(true);
    expect(await displayVisible()).toHaveLength(1);
    // dragGesture back to the top, then clickGesture on an element's origin.
    await call('POST', `/session/${sid}/appium/gestures/drag`, {
      start: { x: 360, y: 400 },
      end: { x: 360, y: 1150 },
    });
    await call('POST', `/session/${sid}/appium/gestures/drag`, {
      start: { x: 360, y: 400 },
      end: { x: 360, y: 1150 },
    });
    const battery = elementId(await find(sid, 'xpath', "//*[@text='Battery']"));
    await call('POST', `/session/${sid}/appium/gestures/click`, {
      origin: { [ELEMENT_KEY]: battery, ELEMENT: battery },
    });
    expect((await find(sid, 'xpath', "//*[@text='Battery Saver']")).status).toBe(200);
    const bad = await call('POST', `/session/${sid}/appium/gestures/swipe`, {
      area: { left: 0, top: 0, width: 10, height: 10 },
      direction: 'sideways',
    });
    expect(bad.status).toBe(400);
  });

  it('scrolls and flings an element inside its margins, in whole-area swipes, as the real server does', async () => {
    h.ui.launch('com.android.settings');
    const sid = await newSession();
    const list = elementId(await find(sid, 'xpath', "//*[@scrollable='true']"));
    const origin = { [ELEMENT_KEY]: list, ELEMENT: list };
    const visible = async (text: string) =>
      ((await find(sid, 'xpath', `//*[@text='${text}']`, true)).body.value as unknown[]).length > 0;
    // percent 1 and more on the list: the swipes stay inside it (a tenth off each edge), so
    // they never reach the navigation bar's home gesture, and loop until the end.
    let more = true;
    for (let i = 0; more && i < 10; i++) {
      more = (
        await call('POST', `/session/${sid}/appium/gestures/scroll`, {
          origin,
          direction: 'down',
          percent: 3,
        })
      ).body.value as boolean;
      expect(h.ui.foreground().package).toBe('com.android.settings');
    }
    expect(more).toBe(false);
    expect(await visible('About phone')).toBe(true);
    // A fling goes where its direction says (the finger the other way): back up to the top.
    for (let i = 0; i < 10 && !(await visible('Network & internet')); i++) {
      await call('POST', `/session/${sid}/appium/gestures/fling`, { origin, direction: 'up' });
    }
    expect(await visible('Network & internet')).toBe(true);
    const atTop = await call('POST', `/session/${sid}/appium/gestures/fling`, { origin, direction: 'up' });
    expect(atTop.body.value).toBe(false);
    // Swipes take 0 to 1 of the area; scroll and swipe need an element or an area.
    const far = await call('POST', `/session/${sid}/appium/gestures/swipe`, {
      origin,
      direction: 'up',
      percent: 1.5,
    });
    expect(far.status).toBe(400);
    expect((far.body.value as { message: string }).message).toContain(
      'Percent must be between 0.0f and 1.0f',
    );
    const nowhere = await call('POST', `/session/${sid}/appium/gestures/scroll`, {
      direction: 'down',
      percent: 1,
    });
    expect(nowhere.status).toBe(400);
    expect((nowhere.body.value as { message: string }).message).toContain(
      'The scroll area coordinates must be provided if element is not set',
    );
    const noPercent = await call('POST', `/session/${sid}/appium/gestures/scroll`, {
      origin,
      direction: 'down',
    });
    expect((noPercent.body.value as { message: string }).message).toContain(
      "ScrollModel: The mandatory field 'percent' is not present",
    );
  });

  it('long-presses with long_click and with W3C actions held in place; a short hold is a tap', async () => {
    const sid = await newSession();
    const appInfo = async () =>
      (await find(sid, 'accessibility id', 'App info', true)).body.value as unknown[];
    const icon = elementId(await find(sid, 'accessibility id', 'Login'));
    await call('POST', `/session/${sid}/appium/gestures/long_click`, {
      origin: { [ELEMENT_KEY]: icon, ELEMENT: icon },
      duration: 1000,
    });
    expect(await appInfo()).toHaveLength(1);
    await call('POST', `/session/${sid}/back`);
    expect(await appInfo()).toEqual([]);
    expect(h.ui.foreground().package).toBe('com.android.launcher3');

    const hold = (ms: number) =>
      finger([
        { type: 'pointerMove', duration: 0, origin: { [ELEMENT_KEY]: icon, ELEMENT: icon }, x: 0, y: 0 },
        { type: 'pointerDown', button: 0 },
        { type: 'pause', duration: ms },
        { type: 'pointerUp', button: 0 },
      ]);
    await call('POST', `/session/${sid}/actions`, hold(600));
    expect(await appInfo()).toHaveLength(1);
    // A tap on the icon while its menu is open only closes the menu.
    await call('POST', `/session/${sid}/element/${icon}/click`);
    expect(await appInfo()).toEqual([]);
    expect(h.ui.foreground().package).toBe('com.android.launcher3');
    await call('POST', `/session/${sid}/actions`, hold(50));
    expect(h.ui.foreground().package).toBe('com.phonelease.login');
  });

  it('drags as UiObject2.drag and W3C actions do: a press held past the long-press timeout, then a move', async () => {
    h.ui.key(3);
    const sid = await newSession();
    const appInfo = async () =>
      (await find(sid, 'accessibility id', 'App info', true)).body.value as unknown[];
    const icon = elementId(await find(sid, 'accessibility id', 'Login'));
    const at = (await call('GET', `/session/${sid}/element/${icon}/rect`)).body.value as Record<
      string,
      number
    >;
    const [cx, cy] = [at.x! + at.width! / 2, at.y! + at.height! / 2];
    // dragGesture held in place: the icon's long click, its menu.
    await call('POST', `/session/${sid}/appium/gestures/drag`, {
      origin: { [ELEMENT_KEY]: icon, ELEMENT: icon },
      end: { x: cx, y: cy },
    });
    expect(await appInfo()).toHaveLength(1);
    await call('POST', `/session/${sid}/back`);
    // Moved: Launcher3 would lift the icon; not modeled, so refused, and nothing changes.
    const before = h.ui.renderRgba().slice();
    const lifted = await call('POST', `/session/${sid}/appium/gestures/drag`, {
      origin: { [ELEMENT_KEY]: icon, ELEMENT: icon },
      end: { x: cx, y: cy - 300 },
    });
    expect(lifted.status).toBe(500);
    expect(lifted.body.value).toMatchObject({
      error: 'unsupported operation',
      message: 'The virtual phone does not model dragging "Login" (held in place, it is a long click)',
    });
    const move = (holdMs: number) =>
      finger([
        { type: 'pointerMove', duration: 0, x: cx, y: cy },
        { type: 'pointerDown', button: 0 },
        { type: 'pause', duration: holdMs },
        { type: 'pointerMove', duration: 300, x: cx, y: cy - 300 },
        { type: 'pointerUp', button: 0 },
      ]);
    expect((await call('POST', `/session/${sid}/actions`, move(1000))).body.value).toMatchObject({
      error: 'unsupported operation',
    });
    expect(Buffer.compare(h.ui.renderRgba(), before)).toBe(0);
    // Not held first: a swipe, as before.
    expect((await call('POST', `/session/${sid}/actions`, move(0))).status).toBe(200);
    expect(await appInfo()).toEqual([]);
    // Held, then moved where nothing takes the held press (Settings' list): it scrolls.
    h.ui.launch('com.android.settings');
    const display = async () =>
      (await find(sid, '-android uiautomator', 'new UiSelector().text("Display")', true)).body
        .value as unknown[];
    expect(await display()).toEqual([]);
    await call('POST', `/session/${sid}/appium/gestures/drag`, {
      start: { x: 360, y: 1100 },
      end: { x: 360, y: 300 },
    });
    expect(await display()).toHaveLength(1);
  });

  it('presses keys, reports the current app, and keeps settings', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    expect((await call('GET', `/session/${sid}/appium/device/current_package`)).body.value).toBe(
      'com.phonelease.login',
    );
    expect((await call('GET', `/session/${sid}/appium/device/current_activity`)).body.value).toBe(
      'com.phonelease.login.LoginActivity',
    );
    const user = elementId(await find(sid, 'id', 'username'));
    await call('POST', `/session/${sid}/element/${user}/click`, {});
    // d, e, m, o as key codes, then Enter moves to the password field.
    // SHIFT_LEFT_ON (0x40) types a capital; Enter then moves to the password field.
    await call('POST', `/session/${sid}/appium/device/press_keycode`, { keycode: 32, metastate: 0x41 });
    for (const keycode of [33, 41, 43])
      await call('POST', `/session/${sid}/appium/device/press_keycode`, { keycode });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('Demo');
    // CTRL+A (CTRL_ON | CTRL_LEFT_ON) is a shortcut: not modeled, and no "a" is typed.
    const shortcut = await call('POST', `/session/${sid}/appium/device/press_keycode`, {
      keycode: 29,
      metastate: 0x3000,
    });
    expect(shortcut.status).toBe(500);
    expect(shortcut.body.value).toMatchObject({
      error: 'unsupported operation',
      message: expect.stringContaining('does not model key shortcuts (metastate 0x3000'),
    });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('Demo');
    // A long press is a key-down, its repeat and a key-up: a letter is typed twice, DEL deletes twice.
    await call('POST', `/session/${sid}/appium/device/long_press_keycode`, { keycode: 36 });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('Demohh');
    await call('POST', `/session/${sid}/appium/device/long_press_keycode`, { keycode: 67 });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('Demo');
    await call('POST', `/session/${sid}/element/${user}/clear`, {});
    for (const keycode of [32, 33, 41, 43, 66])
      await call('POST', `/session/${sid}/appium/device/press_keycode`, { keycode });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('demo');
    await call('POST', `/session/${sid}/keys`, { text: 'secret\ue007' });
    const result = elementId(await find(sid, 'id', 'result'));
    expect((await call('GET', `/session/${sid}/element/${result}/text`)).body.value).toBe('Welcome, demo!');
    await call('POST', `/session/${sid}/appium/device/press_keycode`, { keycode: 3 });
    expect(h.ui.foreground().package).toBe('com.android.launcher3');

    const set = await call('POST', `/session/${sid}/appium/settings`, {
      settings: { waitForIdleTimeout: 0 },
    });
    expect(set.status).toBe(200);
    expect((await call('GET', `/session/${sid}/appium/settings`)).body.value).toMatchObject({
      waitForIdleTimeout: 0,
    });
    expect((await call('GET', `/session/${sid}/orientation`)).body.value).toBe('PORTRAIT');
    expect((await call('POST', `/session/${sid}/timeouts`, { implicit: 0 })).status).toBe(200);
    // A long press of POWER (its menu) is not modeled; the screen stays on.
    const power = await call('POST', `/session/${sid}/appium/device/long_press_keycode`, { keycode: 26 });
    expect(power.body.value).toMatchObject({ error: 'unsupported operation' });
    // No notification shade is drawn: opening it is refused, not pretended.
    const shade = await call('POST', `/session/${sid}/appium/device/open_notifications`, {});
    expect(shade.status).toBe(500);
    expect(shade.body.value).toMatchObject({ error: 'unsupported operation' });
  });

  it('leaves out the views unimportant for accessibility with ignoreUnimportantViews, as uiautomator dump --compressed does', async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const source = async () => String((await call('GET', `/session/${sid}/source`)).body.value);
    const full = await source();
    const layouts = (xml: string) =>
      (xml.match(/<android\.widget\.(LinearLayout|FrameLayout)\b/g) ?? []).length;
    expect(layouts(full)).toBeGreaterThan(1);
    await call('POST', `/session/${sid}/appium/settings`, { settings: { ignoreUnimportantViews: true } });
    const compressed = await source();
    // The window's root stays; the layouts that only hold others go, their children moved up.
    expect(layouts(compressed)).toBe(1);
    for (const id of ['username', 'password', 'login'])
      expect(compressed).toContain(`resource-id="com.phonelease.login:id/${id}"`);
    expect(compressed.length).toBeLessThan(full.length);
    // What the test finds is found the same way, and still acts.
    const user = elementId(await find(sid, 'xpath', '/hierarchy/*/android.widget.EditText[1]'));
    await call('POST', `/session/${sid}/element/${user}/value`, { text: 'demo' });
    expect((await call('GET', `/session/${sid}/element/${user}/text`)).body.value).toBe('demo');
    // The setting off again, the whole tree is back; uiautomator dump --compressed matches.
    await call('POST', `/session/${sid}/appium/settings`, { settings: { ignoreUnimportantViews: false } });
    expect(layouts(await source())).toBe(layouts(full));
    const dumped = h.ui.dumpHierarchy(true);
    expect((dumped.match(/class="android\.widget\.(LinearLayout|FrameLayout)"/g) ?? []).length).toBe(1);
    expect((h.ui.dumpHierarchy().match(/<node /g) ?? []).length).toBeGreaterThan(
      (dumped.match(/<node /g) ?? []).length,
    );
  });

  it('lists a toast for 3.5 s on the UI clock: the countdown to developer options, tap by tap', async () => {
    h.ui.launch('com.android.settings', 'com.android.settings.Settings$MyDeviceInfoActivity');
    const sid = await newSession();
    const build = elementId(await find(sid, 'text', 'Build number'));
    /** The text of the toast the server lists beside the window, null when it lists none. */
    const toast = async (): Promise<unknown> => {
      const found = await find(sid, 'class name', 'android.widget.Toast');
      if (found.status === 404) return null;
      return (await call('GET', `/session/${sid}/element/${elementId(found)}/text`)).body.value;
    };
    const said: unknown[] = [];
    for (let i = 0; i < 7; i++) {
      await call('POST', `/session/${sid}/element/${build}/click`, {});
      said.push(await toast());
    }
    expect(said).toEqual([
      null,
      null,
      'You are now 4 steps away from being a developer.',
      'You are now 3 steps away from being a developer.',
      'You are now 2 steps away from being a developer.',
      'You are now 1 step away from being a developer.',
      'You are now a developer!',
    ]);
    expect(h.settings.get('global/development_settings_enabled')).toBe('1');
    // Its age is read on the clock that stamped it (the UI's, here another year than the host's).
    h.clock.ms += 3_500;
    expect(await toast()).toBe('You are now a developer!');
    h.clock.ms += 1;
    expect(await toast()).toBeNull();
  });

  it('returns at once when asked for the rotation it has, even on a screen that does not turn', async () => {
    const sid = await newSession();
    // Locked at 270, on the launcher, which keeps portrait.
    h.settings.set('system/user_rotation', '3');
    h.ui.settingsChanged?.();
    expect((await call('GET', `/session/${sid}/orientation`)).body.value).toBe('PORTRAIT');
    const portrait = await call('POST', `/session/${sid}/orientation`, { orientation: 'PORTRAIT' });
    expect([portrait.status, portrait.body.value]).toEqual([200, 'PORTRAIT']);
    const upright = await call('POST', `/session/${sid}/rotation`, { x: 0, y: 0, z: 0 });
    expect([upright.status, upright.body.value]).toEqual([200, 'ROTATION_0']);
    // Nothing was frozen: the lock still says 270, and an app that may turn does.
    expect(h.rotations).toEqual([]);
    expect(h.settings.get('system/user_rotation')).toBe('3');
    h.ui.launch('com.phonelease.login');
    expect((await call('GET', `/session/${sid}/rotation`)).body.value).toEqual({ x: 0, y: 0, z: 270 });
    // Another rotation is set, and one the screen cannot take is refused.
    h.ui.key(3);
    const refused = await call('POST', `/session/${sid}/rotation`, { x: 0, y: 0, z: 90 });
    expect([refused.status, refused.body.value]).toMatchObject([
      400,
      {
        error: 'invalid element state',
        message:
          'Screen rotation cannot be changed to ROTATION_90 after 2000ms. Is it locked programmatically?',
      },
    ]);
    expect(h.rotations).toEqual([1]);
  });

  it("reads the orientation and rotation bodies as the real server's Gson does", async () => {
    h.ui.launch('com.phonelease.login');
    const sid = await newSession();
    const post = async (path: string, body: unknown) => {
      const r = await call('POST', `/session/${sid}${path}`, body);
      const value = r.body.value as { error?: string; message?: string } | string;
      return typeof value === 'string'
        ? { status: r.status, value }
        : { status: r.status, error: value.error, message: value.message };
    };
    const invalid = (message: string) => ({ status: 400, error: 'invalid argument', message });
    // A required field that is absent or null.
    const noOrientation = invalid(
      "java.lang.IllegalArgumentException: OrientationModel: The mandatory field 'orientation' is not present in JSON",
    );
    expect(await post('/orientation', {})).toEqual(noOrientation);
    expect(await post('/orientation', { orientation: null })).toEqual(noOrientation);
    const noZ = invalid(
      "java.lang.IllegalArgumentException: RotationModel: The mandatory field 'z' is not present in JSON",
    );
    expect(await post('/rotation', { x: 0, y: 0 })).toEqual(noZ);
    expect(await post('/rotation', { x: 0, y: 0, z: null })).toEqual(noZ);
    // An int field takes a string that holds an int.
    expect(await post('/rotation', { x: 0, y: 0, z: '90' })).toEqual({ status: 200, value: 'ROTATION_90' });
    expect((await call('GET', `/session/${sid}/rotation`)).body.value).toEqual({ x: 0, y: 0, z: 90 });
    expect(await post('/rotation', { z: 'ninety' })).toEqual(
      invalid(
        'com.google.gson.JsonSyntaxException: java.lang.NumberFormatException: For input string: "ninety"',
      ),
    );
    expect(await post('/rotation', { z: 45 })).toEqual(
      invalid(
        'java.lang.IllegalArgumentException: Rotation value of 45 degrees is not supported. Only 0, 90, 180 and 270 degrees could be translated into a valid screen rotation',
      ),
    );
    expect(await post('/orientation', { orientation: 'sideways' })).toEqual(
      invalid(
        "java.lang.IllegalArgumentException: Orientation value 'sideways' is not supported. Only 'LANDSCAPE' and 'PORTRAIT' values could be translated into a valid screen orientation",
      ),
    );
    expect(await post('/orientation', { orientation: 'portrait' })).toEqual({
      status: 200,
      value: 'PORTRAIT',
    });
    expect(h.rotations).toEqual([1, 0]);
  });

  it('serves HTTP on a plain Duplex stream, as adb forwards hand it over', async () => {
    // Two cross-wired Duplex ends: what the phone side gets for an adb tcp:6790 stream.
    let received = '';
    let phoneEnd: Duplex | null = null;
    const hostEnd = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        phoneEnd?.push(chunk);
        cb();
      },
    });
    phoneEnd = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        received += chunk.toString();
        cb();
      },
    });
    h.uia2.handleConnection(phoneEnd);
    hostEnd.write('GET /status HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((resolve) => {
      const check = () => (received.includes('"ready":true') ? resolve() : setTimeout(check, 5));
      check();
    });
    expect(received.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(received).toMatch(/content-type: application\/json/i);
    const closed = new Promise<void>((resolve) => phoneEnd?.once('close', () => resolve()));
    h.uia2.close();
    await closed;
  });

  it('serves several requests on one kept-alive connection and closes connections on close()', async () => {
    const socket = net.connect((h.tcp.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.write('GET /status HTTP/1.1\r\nHost: x\r\n\r\nGET /sessions HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((resolve) => {
      const check = () =>
        (received.match(/HTTP\/1\.1 200/g)?.length ?? 0) >= 2 ? resolve() : setTimeout(check, 5);
      check();
    });
    expect(received).toContain('"ready":true');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    h.uia2.close();
    await closed;
  });
});
