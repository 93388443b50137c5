/**
 * The fallback back end: `uiautomator dump` for the tree and `input` for gestures. Every
 * Android phone has both, so it works where the UiAutomator2 server cannot be installed,
 * but each dump costs a second or more: `uiautomator dump` first waits for the screen to go a
 * whole second without an accessibility event (AOSP's DumpCommand: waitForIdle(1000,
 * 10000)). That wait makes one read stable on its own (`settles`).
 */
import type { PhoneChannel, UiDriver } from './driver.js';
import type { UiNode } from './tree.js';

const DUMP_FILE = '/data/local/tmp/phonelease-ui.xml';

/** Quotes one shell word for the phone's sh. */
function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export class DumpDriver implements UiDriver {
  readonly engine = 'dump' as const;
  readonly settles = true;
  readonly #phone: PhoneChannel;

  constructor(phone: PhoneChannel) {
    this.#phone = phone;
  }

  async source(): Promise<string> {
    // The old file goes first: a dump that cannot get an idle screen says so and exits 0
    // without writing one, and the previous screen must not be read as this one.
    const r = await this.#phone.shell(
      `rm -f ${DUMP_FILE}; uiautomator dump ${DUMP_FILE} >/dev/null && cat ${DUMP_FILE}`,
    );
    const at = r.stdout.indexOf('<');
    if (r.exitCode !== 0 || at < 0) {
      const said = (r.stderr || r.stdout).trim().split('\n')[0];
      throw new Error(
        `uiautomator dump failed (exit code ${r.exitCode}${said ? `: ${said}` : ''}); it reads only a screen that stays still for a second, so an animation or a ticking view keeps it from reading.`,
      );
    }
    return r.stdout.slice(at);
  }

  async #input(args: string): Promise<void> {
    const r = await this.#phone.shell(`input ${args}`);
    if (r.exitCode !== 0) throw new Error(`input ${args} failed: ${(r.stderr || r.stdout).trim()}`);
  }

  tap(x: number, y: number): Promise<void> {
    return this.#input(`tap ${x} ${y}`);
  }

  longPress(x: number, y: number, durationMs: number): Promise<void> {
    return this.#input(`swipe ${x} ${y} ${x} ${y} ${durationMs}`);
  }

  swipe(from: { x: number; y: number }, to: { x: number; y: number }, durationMs: number): Promise<void> {
    return this.#input(`swipe ${from.x} ${from.y} ${to.x} ${to.y} ${durationMs}`);
  }

  key(keycode: number): Promise<void> {
    return this.#input(`keyevent ${keycode}`);
  }

  async replaceText(node: UiNode, text: string): Promise<void> {
    // Move to the end and delete what is there (a password field reports one bullet per character).
    const length = [...node.text].length;
    if (length > 0) await this.#input(`keyevent 123 ${Array.from({ length }, () => '67').join(' ')}`);
    // `input text` takes %s for a space; everything else goes through the shell quoted.
    if (text) await this.#input(`text ${quote(text.replace(/%/g, '\\%').replace(/ /g, '%s'))}`);
  }

  async close(): Promise<void> {}
}
