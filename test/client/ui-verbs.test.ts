/**
 * The locator verbs beyond fill and click, on a leased phone of the real server and over
 * both back ends: scrolling the Settings list to an item and back, swiping it, flipping
 * switches (checked against `settings get`), long-pressing a launcher icon, keys on a field,
 * clearing, refining (filter, nth, all, descendants, XPath, RegExps), combining (and, or,
 * filter({ has, hasNot })), setChecked, isHidden, attributes, boxes, the screen's size and
 * waiting for a view to go away. Every test reads its outcome from the phone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leasePhone, type Lease } from '../../src/index.js';
import { uiEngineOf } from '../../src/lease/lease.js';
import { fieldValue, StrictModeViolationError, type Locator } from '../../src/ui/index.js';
import { parseHierarchy } from '../../src/ui/tree.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { leaseOptions } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 20, phones: 12 });
}, 60_000);
afterAll(() => t?.close());

type Engine = 'uiautomator2' | 'dump';

async function lease(engine: Engine): Promise<Lease> {
  const phone = await leasePhone(leaseOptions(t));
  uiEngineOf(phone).configure({ engine, actionTimeout: 10_000 });
  return phone;
}

async function setting(phone: Lease, ns: string, key: string): Promise<string> {
  return (await phone.shell(`settings get ${ns} ${key}`)).stdout.trim();
}

async function resumedActivity(phone: Lease): Promise<string> {
  const out = (await phone.shell('dumpsys activity activities')).stdout;
  return /mResumedActivity: .*? (\S+\/\S+)/.exec(out)?.[1] ?? out.slice(0, 200);
}

const LIST = 'com.android.settings:id/recycler_view';

describe.each(['uiautomator2', 'dump'] as const)('locator verbs over %s', (engine) => {
  it('scrolls the Settings list to an item below the fold and back up to one above it', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.android.settings');
    const about = phone.getByText('About phone', { exact: true });
    expect(await about.count()).toBe(0); // RecyclerView keeps no views for rows off screen
    await about.scrollIntoView();
    const list = await phone.getById(LIST).boundingBox();
    const box = await about.boundingBox();
    expect(list && box).toBeTruthy();
    expect(box!.y).toBeGreaterThanOrEqual(list!.y);
    expect(box!.y + box!.height).toBeLessThanOrEqual(list!.y + list!.height);
    expect(await phone.getByText('Network & internet').count()).toBe(0);

    // The row is really there: tapping it opens the page, whose Model row tells the truth.
    await about.click();
    const model = phone
      .locator({ hasChild: { selector: { text: 'Model' } } })
      .locator({ res: 'android:id/summary' });
    expect(await model.textContent()).toBe((await phone.shell('getprop ro.product.model')).stdout.trim());
    await phone.press('Back');

    // The first row is now above the fold: scrolling down finds nothing, so it turns round.
    await phone.getByText('Network & internet').scrollIntoView();
    expect(await phone.getByText('Network & internet').isVisible()).toBe(true);
    expect(await about.count()).toBe(0);
  });

  it('scrolls the list that holds the element, not the first scrollable on screen', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.android.settings');
    await phone.getByText('Apps', { exact: true }).click();
    await phone.getByText('Default apps').scrollIntoView();
    expect(await phone.getByText('Default apps').isVisible()).toBe(true);
  });

  it('names the locator when scrolling both ways never shows it', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.android.settings');
    // Each dump waits for a quiet second: going to the end and back takes it a dozen reads.
    const timeout = engine === 'dump' ? 20_000 : 3000;
    const error = await phone
      .getByText('Developer options')
      .scrollIntoView({ timeout })
      .catch((e: unknown) => e);
    const message = (error as Error).message;
    expect(message).toContain(`scrollIntoView: Timeout ${timeout}ms exceeded`);
    expect(message).toContain('scrolled both ways; the element never showed');
    expect(message).toContain("phone.getByText('Developer options') matched nothing on screen");
    // It went to the end and back: the first row shows again.
    expect(await phone.getByText('Network & internet').isVisible()).toBe(true);
  });

  it('leaves alone an element outside every scrollable view, and reveals a clipped row whole', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.android.settings');
    // The app bar title sits above the list: it shows already, nothing needs to scroll.
    await phone.getByText('Settings', { exact: true }).scrollIntoView({ timeout: 2000 });
    const row = (title: string) => phone.locator({ clickable: true }).filter({ hasText: title });
    const full = (await row('Network & internet').boundingBox())!.height;
    const list = (await phone.getById(LIST).boundingBox())!;
    // Whichever row the list cuts at its bottom edge ends up shown whole.
    const titles = await Promise.all(
      (await phone.getById('android:id/title').all()).map((l) => l.textContent()),
    );
    const cut = titles[titles.length - 1]!;
    const before = (await row(cut).boundingBox())!;
    expect(before.y + before.height).toBe(list.y + list.height);
    expect(before.height).toBeLessThan(full);
    await row(cut).scrollIntoView();
    const after = (await row(cut).boundingBox())!;
    expect(after.height).toBe(full);
    expect(after.y + after.height).toBeLessThanOrEqual(list.y + list.height);

    // A whole row that merely touches the edge is left where it is: line the last row up
    // with the bottom edge (this list scrolls by exactly the finger's travel), then ask.
    const last = async () => {
      const all = await phone.getById('android:id/title').all();
      return row((await all[all.length - 1]!.textContent())!);
    };
    const edge = (await (await last()).boundingBox())!;
    const travel = full - edge.height + (full - edge.height < 40 ? full : 0);
    const x = list.x + list.width / 2;
    await phone.shell(`input swipe ${x} ${list.y + 600} ${x} ${list.y + 600 - travel} 300`);
    const whole = await last();
    const lined = (await whole.boundingBox())!;
    expect(lined.height).toBe(full);
    expect(lined.y + lined.height).toBe(list.y + list.height);
    await whole.scrollIntoView();
    expect(await whole.boundingBox()).toEqual(lined);
  });

  it('swipes the Settings list: the rows move with the finger and come back', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.android.settings');
    const network = phone.getByText('Network & internet');
    const before = await network.boundingBox();
    expect(before).not.toBeNull();
    await phone.getById(LIST).swipe('up');
    const moved = await network.boundingBox();
    // Moved up by part of the list's height, or out of sight altogether.
    expect(moved === null || moved.y < before!.y).toBe(true);
    expect(await phone.getByText('Storage', { exact: true }).isVisible()).toBe(true);
    await phone.getById(LIST).swipe('down');
    await phone.getById(LIST).swipe('down');
    expect(await network.boundingBox()).toEqual(before);
  });

  it('checks and unchecks switches, and the settings follow', async () => {
    await using phone = await lease(engine);
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const row = (title: string) => phone.locator({ clickable: true }).filter({ hasText: title });
    const wifi = row('Use Wi-Fi').locator({ checkable: true });
    const airplane = row('Airplane mode').locator({ checkable: true });
    await wifi.waitFor();

    expect(await setting(phone, 'global', 'wifi_on')).toBe('1');
    expect(await wifi.isChecked()).toBe(true);
    await wifi.check(); // already checked: no tap
    expect(await setting(phone, 'global', 'wifi_on')).toBe('1');
    await wifi.uncheck();
    expect(await setting(phone, 'global', 'wifi_on')).toBe('0');
    expect(await wifi.isChecked()).toBe(false);
    expect(await wifi.getAttribute('checked')).toBe('false');
    await wifi.uncheck(); // already unchecked: no tap
    expect(await setting(phone, 'global', 'wifi_on')).toBe('0');

    expect(await airplane.isChecked()).toBe(false);
    await airplane.check();
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('1');
    expect(await airplane.getAttribute('checked')).toBe('true');
    await airplane.uncheck();
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('0');
    await wifi.check();
    expect(await setting(phone, 'global', 'wifi_on')).toBe('1');
  });

  it('says where the switch is when check() is called on a row or its title', async () => {
    await using phone = await lease(engine);
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const error = await phone
      .getByText('Airplane mode', { exact: true })
      .check({ timeout: 2000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(
      "phone.getByText('Airplane mode', { exact: true }).check: the element is not checkable (android.widget.TextView)",
    );
    expect(message).toContain('Switch id=switch_widget text="OFF"');
    const suggested = /use a locator of the row, e\.g\. (phone\..*)\.$/m.exec(message)?.[1];
    expect(suggested).toBe(
      "phone.locator({ clickable: true }).filter({ hasText: 'Airplane mode' }).locator({ checkable: true })",
    );
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('0');
    // isChecked() on a view that has no checked state says so rather than answering false.
    await phone.shell('settings put global wifi_on 1');
    const read = await phone
      .getByText('Wi-Fi', { exact: true })
      .isChecked({ timeout: 2000 })
      .catch((e: unknown) => e);
    expect((read as Error).message).toContain('.isChecked: the element is not checkable');
  });

  it('long-presses a launcher icon for its menu; a tap still opens the app', async () => {
    await using phone = await lease(engine);
    await phone.press('Home');
    const icon = phone.getByDesc('Login');
    await icon.longPress();
    const appInfo = phone.getByText('App info', { exact: true });
    await appInfo.waitFor();
    expect(await resumedActivity(phone)).toContain('com.android.launcher3');
    await appInfo.click();
    await phone.getByText('Force stop').waitFor();
    expect(await resumedActivity(phone)).toBe('com.android.settings/.SubSettings');
    expect(await phone.getByText('com.phonelease.login', { exact: true }).count()).toBe(1);

    await phone.press('Home');
    await icon.longPress();
    await appInfo.waitFor();
    await phone.press('Back'); // closes the menu, as on a phone
    await appInfo.waitFor({ state: 'detached' });
    await icon.click();
    await phone.getById('username').waitFor();
    expect(await resumedActivity(phone)).toBe('com.phonelease.login/.LoginActivity');
  });

  it('presses keys on a field: Backspace edits it, Enter submits the form', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('demox');
    await phone.getById('username').press('Backspace');
    expect(await phone.getById('username').textContent()).toBe('demo');
    await phone.getById('password').fill('secret');
    await phone.getById('password').press('Enter');
    await phone.getByText('Welcome, demo!').waitFor();
    const log = (await phone.shell('logcat -d -s PhoneleaseLogin')).stdout;
    expect(log.match(/login attempt user=demo result=success/g)).toHaveLength(1);
    // Android's own key names work too.
    await phone.getById('username').press('KEYCODE_DEL');
    await phone.getById('username').press('KEYCODE_FORWARD_DEL');
    expect(await phone.getById('username').textContent()).toBe('dem');
  });

  it('presses a key on a button without tapping it: the key goes to the focused field', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('demo');
    await phone.getById('password').fill('secret');
    // A tap on the button would sign in once and Enter in the password field once more.
    await phone.getByText('Log in').press('Enter');
    await phone.getByText('Welcome, demo!').waitFor();
    const log = (await phone.shell('logcat -d -s PhoneleaseLogin')).stdout;
    expect(log.match(/login attempt/g)).toHaveLength(1);
  });

  it('clears a password field, so the app sees it empty', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('demo');
    await phone.getById('password').fill('secret');
    await phone.getById('password').clear();
    expect(await phone.getById('password').getAttribute('text')).toBe('');
    await phone.getById('password').clear(); // an empty field stays empty
    await phone.getByText('Log in').click();
    expect(await phone.getById('result').textContent()).toBe('Enter username and password');
  });

  it('refuses to fill or clear a view that takes no text, without tapping it', async () => {
    await using phone = await lease(engine);
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const row = phone.locator({ clickable: true }).filter({ hasText: 'Use Wi-Fi' });
    for (const attempt of [() => row.fill('x', { timeout: 2000 }), () => row.clear({ timeout: 2000 })]) {
      const error = await attempt().catch((e: unknown) => e);
      expect((error as Error).message).toMatch(
        /the element is not editable \(android\.widget\.LinearLayout\)/,
      );
    }
    // The row was never tapped: Wi-Fi is still on.
    expect(await setting(phone, 'global', 'wifi_on')).toBe('1');
  });

  it('refines: filter, nth, first, last, all, descendants, XPath and RegExps', async () => {
    await using phone = await lease(engine);
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const titles = phone.getById('android:id/title');
    await titles.first().waitFor();
    const all = await titles.all();
    const texts = await Promise.all(all.map((l) => l.textContent()));
    expect(texts.slice(0, 4)).toEqual(['Internet', 'Wi-Fi', 'Airplane mode', 'Mobile data']);
    expect(await titles.first().textContent()).toBe('Internet');
    expect(await titles.nth(2).textContent()).toBe('Airplane mode');
    expect(await titles.last().textContent()).toBe(texts[texts.length - 1]);
    expect(await titles.nth(-2).textContent()).toBe(texts[texts.length - 2]);
    expect(await titles.nth(99).count()).toBe(0);

    const rows = phone.locator({ clickable: true, clazz: 'android.widget.LinearLayout' });
    expect(await rows.filter({ hasText: 'airplane MODE' }).count()).toBe(1);
    expect(
      await rows
        .filter({ hasText: /^Mobile data\b/ })
        .locator({ checkable: true })
        .count(),
    ).toBe(1);
    expect(await rows.locator({ checkable: true }).count()).toBe(3);
    expect(await rows.filter({ hasNotText: 'O' }).count()).toBe(0); // every row shows ON/OFF or a summary
    // Descendants only: a row is not inside itself.
    expect(await rows.filter({ hasText: 'Airplane mode' }).locator({ clickable: true }).count()).toBe(0);

    expect(await phone.locator('xpath=//android.widget.Switch').count()).toBe(3);
    expect(await phone.locator("xpath=//*[@text='Airplane mode']/../..").count()).toBe(1);
    const airplane = phone.locator("xpath=//*[@text='Airplane mode']/../..//*[@checkable='true']");
    await airplane.check();
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('1');
    expect(
      await phone.locator("xpath=//*[contains(@text, 'Wi-') and @resource-id='android:id/title']").count(),
    ).toBe(1);

    // XPath relative to a locator: `..` climbs from the title to its row.
    const mobile = phone.getByText('Mobile data', { exact: true }).locator('xpath=../..');
    expect(await mobile.getAttribute('clickable')).toBe('true');
    await mobile.locator({ checkable: true }).uncheck();
    expect(await setting(phone, 'global', 'mobile_data')).toBe('0');
    // Airplane mode turned Wi-Fi off, as on a phone: only its own switch is on.
    expect(await phone.locator('xpath=//*[@checkable="true"][@checked="true"]').count()).toBe(1);
    expect(await phone.locator("xpath=//*[text()='Wi-Fi']").count()).toBe(1);
    const bad = await phone
      .locator('xpath=(//*)[1]')
      .count()
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(SyntaxError);

    expect(await phone.getByText(/^wi-?fi$/i).count()).toBe(1);
    expect(await phone.locator({ text: /Mobile/ }).count()).toBe(1);
    expect(await phone.getByText(/mode$/g).textContent()).toBe('Airplane mode');
    expect(await phone.getByText(/mode$/g).textContent()).toBe('Airplane mode'); // lastIndex reset
  });

  it('combines locators: filter({ has, hasNot }) looks inside each view, and() narrows, or() widens', async () => {
    await using phone = await lease(engine);
    await phone.shell(
      'settings put global wifi_on 1 && settings put global airplane_mode_on 0 && settings put global mobile_data 1',
    );
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const rows = phone.locator({ clickable: true, clazz: 'android.widget.LinearLayout' });
    const switches = phone.locator({ checkable: true });
    await switches.first().waitFor();

    // The row that holds the title, found by what it holds, not by its text.
    const airplaneRow = rows.filter({ has: phone.getByText('Airplane mode', { exact: true }) });
    expect(await airplaneRow.count()).toBe(1);
    await airplaneRow.locator({ checkable: true }).check();
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('1');
    // Airplane mode turned Wi-Fi off, as on a phone; it may be turned on again in it.
    expect(await setting(phone, 'global', 'wifi_on')).toBe('3');
    await rows.filter({ hasText: 'Wi-Fi' }).locator({ checkable: true }).check();
    expect(await setting(phone, 'global', 'wifi_on')).toBe('2');
    const total = await rows.count();
    expect(await rows.filter({ has: switches }).count()).toBe(3);
    expect(await rows.filter({ hasNot: switches }).count()).toBe(total - 3);
    expect(await rows.filter({ has: switches, hasText: 'Mobile' }).count()).toBe(1);
    // `has` looks below each view: a title holds no view, so no title holds itself.
    const titles = phone.getById('android:id/title');
    expect(await titles.filter({ has: phone.getByText('Wi-Fi', { exact: true }) }).count()).toBe(0);

    // and(): both at once. Three switches, of which Wi-Fi, airplane mode and mobile data are on.
    expect(await switches.and(phone.locator({ checked: true })).count()).toBe(3);
    await rows.filter({ hasText: 'Wi-Fi' }).locator({ checkable: true }).uncheck();
    expect(await switches.and(phone.locator({ checked: true })).count()).toBe(2);
    expect(await titles.and(phone.getByText('Airplane')).textContent()).toBe('Airplane mode');
    // or(): either; the one that is there answers.
    const either = phone
      .getByText('Flight mode', { exact: true })
      .or(phone.getByText('Airplane mode', { exact: true }));
    expect(await either.textContent()).toBe('Airplane mode');
    expect(await titles.or(switches).count()).toBe((await titles.count()) + 3);

    // Both there: strict mode names the combined locator.
    const both = phone
      .getByText('Wi-Fi', { exact: true })
      .or(phone.getByText('Airplane mode', { exact: true }));
    const strict = await both.click({ timeout: 2000 }).catch((e: unknown) => e);
    expect(strict).toBeInstanceOf(StrictModeViolationError);
    expect((strict as Error).message).toContain(
      "strict mode violation: phone.getByText('Wi-Fi', { exact: true }).or(phone.getByText('Airplane mode', { exact: true })) resolved to 2 elements",
    );
    // Nothing holds it: the wait names the locator, `has` included, and what is on screen.
    const missing = await rows
      .filter({ has: phone.getByText('Bluetooth') })
      .click({ timeout: 500 })
      .catch((e: unknown) => e);
    expect((missing as Error).message).toContain(
      "phone.locator({ clickable: true, clazz: 'android.widget.LinearLayout' }).filter({ has: phone.getByText('Bluetooth') }) matched nothing on screen",
    );
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('1');
  });

  it('isHidden() reads the screen once: true for what is not there, false for what shows; strict', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    const wrong = phone.getByText('Wrong username or password');
    expect(await wrong.isHidden()).toBe(true);
    expect(await phone.getById('username').isHidden()).toBe(false);
    await phone.getById('username').fill('demo');
    await phone.getById('password').fill('nope');
    await phone.getByText('Log in').click();
    await wrong.waitFor();
    expect(await wrong.isHidden()).toBe(false);
    expect(await wrong.isVisible()).toBe(true);
    const error = await phone
      .getByClass('android.widget.EditText')
      .isHidden()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StrictModeViolationError);
    expect((error as Error).message).toContain(
      "phone.getByClass('android.widget.EditText') resolved to 2 elements",
    );
  });

  it('setChecked() taps only when the state differs, and names the locator when it cannot', async () => {
    await using phone = await lease(engine);
    await phone.shell('settings put global wifi_on 1 && settings put global airplane_mode_on 0');
    await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
    const row = (title: string) => phone.locator({ clickable: true }).filter({ hasText: title });
    const wifi = row('Use Wi-Fi').locator({ checkable: true });
    const airplane = row('Airplane mode').locator({ checkable: true });
    await wifi.setChecked(true); // already on: no tap
    expect(await setting(phone, 'global', 'wifi_on')).toBe('1');
    await wifi.setChecked(false);
    expect(await setting(phone, 'global', 'wifi_on')).toBe('0');
    expect(await wifi.isChecked()).toBe(false);
    await wifi.setChecked(false); // already off: no tap
    expect(await setting(phone, 'global', 'wifi_on')).toBe('0');
    for (const wanted of [true, false]) {
      await airplane.setChecked(wanted);
      expect(await setting(phone, 'global', 'airplane_mode_on')).toBe(wanted ? '1' : '0');
    }

    const title = phone.getByText('Airplane mode', { exact: true });
    const error = await title.setChecked(true, { timeout: 2000 }).catch((e: unknown) => e);
    expect((error as Error).message).toContain(
      "phone.getByText('Airplane mode', { exact: true }).setChecked: the element is not checkable (android.widget.TextView)",
    );
    const wrong = await Promise.resolve()
      .then(() => airplane.setChecked('yes' as unknown as boolean))
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(TypeError);
    expect((wrong as Error).message).toContain(`${airplane}.setChecked takes true or false, got 'yes'`);
    expect(await setting(phone, 'global', 'airplane_mode_on')).toBe('0');
  });

  it("reads the phone's screen size from the UI source, else from wm size", async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    const engineOfPhone = uiEngineOf(phone);
    const physical = /Physical size: (\d+)x(\d+)/.exec((await phone.shell('wm size')).stdout)!;
    const screen = await engineOfPhone.screen(await engineOfPhone.snapshot());
    expect(screen).toEqual({ left: 0, top: 0, right: Number(physical[1]), bottom: Number(physical[2]) });
    if (engine === 'dump') {
      // A dump carries no size: what `wm size` reports is the screen, an override first.
      await phone.shell('wm size 600x1000');
      const snap = await engineOfPhone.snapshot();
      expect(await engineOfPhone.screen(snap)).toEqual({ left: 0, top: 0, right: 600, bottom: 1000 });
      // `wm size` reports the natural orientation; a dump taken sideways says rotation="1".
      const sideways = parseHierarchy(snap.xml.replace('rotation="0"', 'rotation="1"'));
      expect(await engineOfPhone.screen(sideways)).toEqual({ left: 0, top: 0, right: 1000, bottom: 600 });
    }
  });

  it('reads attributes and boxes as the source writes them', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    const user = phone.getById('username');
    expect(await user.getAttribute('resource-id')).toBe('com.phonelease.login:id/username');
    expect(await user.getAttribute('resourceId')).toBe('com.phonelease.login:id/username');
    expect(await user.getAttribute('content-desc')).toBe('username');
    expect(await user.getAttribute('class')).toBe('android.widget.EditText');
    expect(await user.getAttribute('clickable')).toBe('true');
    expect(await user.getAttribute('no-such-attribute')).toBeNull();
    const box = await user.boundingBox();
    const bounds = await user.getAttribute('bounds');
    expect(bounds).toBe(`[${box!.x},${box!.y}][${box!.x + box!.width},${box!.y + box!.height}]`);
    // The box is where the view is: a tap at its centre focuses the field.
    await phone.tap(box!.x + box!.width / 2, box!.y + box!.height / 2);
    expect(await user.getAttribute('focused')).toBe('true');
    expect(await phone.getById('nothing-here').boundingBox()).toBeNull();
  });

  it('waits for a view to be hidden and detached', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('slow');
    await phone.getById('password').fill('secret');
    await phone.getByText('Log in').click();
    const pending = phone.getByText('Signing in');
    await pending.waitFor({ state: 'visible' });
    // A second read within the 1.5 s sign-in: a dump, which first waits for a quiet second,
    // reads only once the sign-in is over, so only the UI server sees the button disabled.
    if (engine === 'uiautomator2') expect(await phone.getByText('Log in').isEnabled()).toBe(false);
    await pending.waitFor({ state: 'hidden' });
    expect(await phone.getById('result').textContent()).toBe('Welcome, slow!');
    await pending.waitFor({ state: 'detached', timeout: 500 });
    const error = await phone
      .getById('result')
      .waitFor({ state: 'detached', timeout: 300 })
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('waitFor: Timeout 300ms exceeded');
    expect((error as Error).message).toContain('waiting for the element to be detached');
  });
});

describe("a text field's value", () => {
  it('reads as empty while the field shows its hint, as Android reports the hint as its text', async () => {
    await using phone = await lease('uiautomator2');
    await phone.launch('com.phonelease.login');
    const field = (xml: string) =>
      parseHierarchy(xml).nodes.find((n) => n.resourceId === 'com.phonelease.login:id/username')!;
    const empty = await uiEngineOf(phone).treeXml();
    expect(field(empty).hint).toBe('Username');
    expect(fieldValue(field(empty))).toBe('');
    // What Android 8 and later report for an empty field: the hint as the text, the hint beside it.
    const withHint = empty.replace(
      /text=""([^>]*resource-id="com\.phonelease\.login:id\/username")/,
      'text="Username"$1',
    );
    expect(field(withHint).text).toBe('Username');
    expect(fieldValue(field(withHint))).toBe('');
    await phone.getById('username').fill('demo');
    expect(fieldValue(field(await uiEngineOf(phone).treeXml()))).toBe('demo');
  });
});

describe('combining locators', () => {
  it('refuses a locator of another phone, or something else, naming both sides', async () => {
    await using a = await lease('dump');
    await using b = await lease('dump');
    const mine = a.getByText('Log in');
    const theirs = b.getById('login');
    for (const combine of [
      () => mine.and(theirs),
      () => mine.or(theirs),
      () => mine.filter({ has: theirs }),
    ]) {
      expect(combine).toThrow(TypeError);
      expect(combine).toThrow(
        "phone.getById('login') belongs to another phone; both locators must come from the same phone",
      );
    }
    expect(() => mine.filter({ hasNot: 'Log in' as unknown as Locator })).toThrow(
      "phone.getByText('Log in').filter({ hasNot }) takes a locator (phone.getByText(...), phone.locator(...)), got 'Log in'",
    );
  });
});
