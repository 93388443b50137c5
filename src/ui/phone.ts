/**
 * Phone-level UI verbs that are not about one element: launching an app and pressing a
 * hardware key. The lease exposes them as phone.launch() and phone.press().
 */
import { AppNotRunnableError } from '../errors.js';
import { keycodeOf, type KeyName } from './driver.js';
import { foregroundPackage } from './diagnostics.js';
import type { UiEngine } from './engine.js';
import { formatValue } from './selector.js';
import { UiTimeoutError } from './diagnostics.js';

const PACKAGE_NAME = /^[A-Za-z][\w]*(\.[A-Za-z][\w]*)+$/;

/**
 * Starts an app's launcher activity and waits until the app is in front (up to the
 * action timeout), so the next locator sees its screen.
 */
export function launchApp(
  engine: UiEngine,
  packageName: string,
  options: { timeout?: number } = {},
): Promise<void> {
  const phone = engine.phone;
  return engine.step(`phone.launch(${formatValue(packageName)})`, async () => {
    if (!PACKAGE_NAME.test(packageName)) {
      throw new TypeError(`${JSON.stringify(packageName)} is not a package name (like com.example.app).`);
    }
    engine.noteInput();
    const r = await phone.shell(`monkey -p ${packageName} -c android.intent.category.LAUNCHER 1`);
    const out = `${r.stdout}${r.stderr}`;
    // The virtual phone refuses apps whose code it cannot run, in words made to be found here.
    if (/can't run on this virtual phone/.test(out)) throw new AppNotRunnableError(packageName);
    if (r.exitCode !== 0 || /No activities found|monkey aborted/.test(out)) {
      throw new Error(
        `phone.launch: ${packageName} has no launcher activity on phone ${phone.id} (is it installed? phone.install() it first): ${out.trim().slice(0, 300)}`,
      );
    }
    const timeout = options.timeout ?? engine.options.actionTimeout;
    const deadline = timeout > 0 ? Date.now() + timeout : Infinity;
    let front: string | null = null;
    for (;;) {
      front = foregroundPackage(await engine.snapshot());
      if (front === packageName) return;
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new UiTimeoutError(
      `phone.launch: Timeout ${timeout}ms exceeded waiting for ${packageName} to come to the front (${front ?? 'nothing'} is in front).`,
    );
  });
}

/** Presses a key on the phone: 'Back', 'Home', 'Enter', ... (see KEYS), a KEYCODE_ name or a number. */
export function pressKey(engine: UiEngine, key: KeyName): Promise<void> {
  const code = keycodeOf(key);
  return engine.step(`phone.press(${formatValue(key)})`, async () => {
    await (await engine.driver()).key(code);
  });
}
