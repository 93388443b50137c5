/**
 * Locators for a phone's UI, modelled on Playwright's Locator: a lazy description of how
 * to find views, resolved afresh on every attempt. Actions wait until their element is
 * attached, visible, enabled and stable (same bounds in two snapshots in a row), then act;
 * a locator that matches several views fails at once (strict mode), and a wait that runs
 * out names the locator and the views on screen nearest to it.
 */
import { inspect } from 'node:util';
import {
  foregroundPackage,
  describeCandidates,
  nearestCandidates,
  StrictModeViolationError,
  strictModeMessage,
  UiTimeoutError,
} from './diagnostics.js';
import { keycodeOf, type KeyName, type UiDriver } from './driver.js';
import type { UiEngine } from './engine.js';
import {
  formatValue,
  resolveSteps,
  selectorStep,
  type Selector,
  type Step,
  type TextMatch,
} from './selector.js';
import {
  centre,
  descendants,
  describeNode,
  sameBounds,
  isTextField,
  isVisible,
  textOf,
  type UiNode,
  type UiSnapshot,
} from './tree.js';
import { cutOf, scrollableAncestor } from './viewport.js';

export interface TimeoutOption {
  /** How long to wait, in ms (default: the action timeout; 0 waits without a limit of its own). */
  timeout?: number;
}

export interface BoundingBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export type WaitForState = 'attached' | 'detached' | 'visible' | 'hidden';
export type SwipeDirection = 'up' | 'down' | 'left' | 'right';

/** What locator.filter() keeps (every given condition must hold). */
export interface FilterOptions {
  /** Its text, or its children's, contains this (case-insensitive) or matches this RegExp. */
  hasText?: TextMatch;
  /** Its text, or its children's, does not contain this. */
  hasNotText?: TextMatch;
  /** It holds a view this locator (of the same phone) matches, looked for inside it. */
  has?: Locator;
  /** It holds no view this locator matches. */
  hasNot?: Locator;
}

/** Poll intervals between snapshots, like Playwright's: quick at first, then every quarter second. */
const BACKOFF = [0, 20, 50, 100, 100, 250];

/** Attribute names as tests write them, mapped to the source's. */
const ATTRIBUTE_ALIASES: Record<string, string> = {
  resourceId: 'resource-id',
  res: 'resource-id',
  contentDescription: 'content-desc',
  desc: 'content-desc',
  className: 'class',
  clazz: 'class',
  packageName: 'package',
  pkg: 'package',
  longClickable: 'long-clickable',
};

function attributeOf(n: UiNode, name: string): string | null {
  const key = ATTRIBUTE_ALIASES[name] ?? name;
  if (key === 'class') return n.className;
  if (key === 'displayed') return String(n.displayed);
  return n.attributes[key] ?? null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

interface Attempt<T> {
  value?: T;
  /** Why this attempt was not good enough (for the timeout message). */
  waiting?: string;
}

export interface AssertionOutcome {
  pass: boolean;
  /** What was on screen at the last attempt, for the message. */
  received: string;
  /** Set when nothing matched. */
  candidates?: string;
}

export class Locator {
  readonly #engine: UiEngine;
  readonly #steps: readonly Step[];
  readonly #title: string;

  /** @internal Use phone.locator() and the phone's getBy* methods. */
  constructor(engine: UiEngine, steps: readonly Step[], title: string) {
    this.#engine = engine;
    this.#steps = steps;
    this.#title = title;
  }

  /** How the locator reads in steps and errors, e.g. `phone.getByText('Log in')`. */
  toString(): string {
    return this.#title;
  }

  [inspect.custom](): string {
    return `Locator(${this.#title})`;
  }

  // -------------------------------------------------------------------------------------
  // Refining

  #with(step: Step, suffix: string): Locator {
    return new Locator(this.#engine, [...this.#steps, step], `${this.#title}${suffix}`);
  }

  /** Views inside this locator's views that match `selector` (an AndroidSelector or `xpath=...`). */
  locator(selector: Selector): Locator {
    return this.#with(selectorStep(selector), `.locator(${formatValue(selector)})`);
  }

  /** Views whose text contains `text` (case-insensitive), equals it with `{ exact: true }`, or matches a RegExp. */
  getByText(text: TextMatch, options: { exact?: boolean } = {}): Locator {
    const exact = options.exact ?? false;
    return this.#with(
      { kind: 'text', query: { text, exact } },
      `.getByText(${formatValue(text)}${exact ? ', { exact: true }' : ''})`,
    );
  }

  /** Views with this resource id: `username` (in the view's own app) or `com.app:id/username`. */
  getById(id: string | RegExp): Locator {
    return this.#with({ kind: 'select', selector: { res: id } }, `.getById(${formatValue(id)})`);
  }

  /** Views with this content description (accessibility id). */
  getByDesc(desc: TextMatch): Locator {
    return this.#with({ kind: 'select', selector: { desc } }, `.getByDesc(${formatValue(desc)})`);
  }

  /** Views of this class, e.g. `android.widget.EditText`. */
  getByClass(className: TextMatch): Locator {
    return this.#with(
      { kind: 'select', selector: { clazz: className } },
      `.getByClass(${formatValue(className)})`,
    );
  }

  first(): Locator {
    return this.#with({ kind: 'nth', index: 0 }, '.first()');
  }

  last(): Locator {
    return this.#with({ kind: 'nth', index: -1 }, '.last()');
  }

  /** The view at `index` (0-based; negative counts from the end). */
  nth(index: number): Locator {
    return this.#with({ kind: 'nth', index }, `.nth(${index})`);
  }

  /**
   * Keeps the views whose text (or their children's) contains `hasText` and not
   * `hasNotText`, that hold a view matching `has` and none matching `hasNot`. `has` and
   * `hasNot` are locators of the same phone, looked for inside each view (not from the
   * screen's root), as Playwright's are: `phone.locator({ clickable: true }).filter({ has:
   * phone.getByText('Airplane mode') })` is the row that shows that title.
   */
  filter(options: FilterOptions): Locator {
    const { hasText, hasNotText, has, hasNot } = options;
    return this.#with(
      {
        kind: 'filter',
        hasText,
        hasNotText,
        has: has && this.#stepsOf(has, 'filter({ has })'),
        hasNot: hasNot && this.#stepsOf(hasNot, 'filter({ hasNot })'),
      },
      `.filter(${formatValue(options)})`,
    );
  }

  /**
   * The views that match both this locator and `other` (of the same phone), e.g. a button
   * with a given text: `phone.getByClass('android.widget.Button').and(phone.getByText('Log in'))`.
   */
  and(other: Locator): Locator {
    return this.#with({ kind: 'and', steps: this.#stepsOf(other, 'and()') }, `.and(${other})`);
  }

  /**
   * The views that match this locator or `other` (of the same phone), in screen order. When
   * both match, strict mode fails: narrow it with .first().
   */
  or(other: Locator): Locator {
    return this.#with({ kind: 'or', steps: this.#stepsOf(other, 'or()') }, `.or(${other})`);
  }

  /** `other`'s steps, once it is known to be a locator of this locator's phone. */
  #stepsOf(other: unknown, where: string): readonly Step[] {
    if (!(other instanceof Locator)) {
      throw new TypeError(
        `${this.#title}.${where} takes a locator (phone.getByText(...), phone.locator(...)), got ${inspect(other)}.`,
      );
    }
    if (other.#engine !== this.#engine) {
      throw new TypeError(
        `${this.#title}.${where}: ${other} belongs to another phone; both locators must come from the same phone.`,
      );
    }
    return other.#steps;
  }

  /** One locator per view that matches now. */
  async all(): Promise<Locator[]> {
    const n = await this.count();
    return Array.from({ length: n }, (_, i) => this.nth(i));
  }

  /** How many views match now (no waiting). */
  async count(): Promise<number> {
    return this.#resolve(await this.#engine.snapshot()).length;
  }

  // -------------------------------------------------------------------------------------
  // Actions

  /** Taps the centre of the element once it is visible, enabled and stable. */
  click(options: TimeoutOption = {}): Promise<void> {
    return this.#action('click', '', options, { enabled: true }, async (n, d) => {
      const { x, y } = centre(n.bounds);
      await d.tap(x, y);
    });
  }

  /** Touches and holds the element (default 1 s). */
  longPress(options: TimeoutOption & { duration?: number } = {}): Promise<void> {
    return this.#action('longPress', '', options, { enabled: true }, async (n, d) => {
      const { x, y } = centre(n.bounds);
      await d.longPress(x, y, options.duration ?? 1000);
    });
  }

  /** Focuses the element and replaces its text with `value`. */
  fill(value: string, options: TimeoutOption = {}): Promise<void> {
    return this.#action(
      'fill',
      formatValue(value),
      options,
      { enabled: true, editable: true },
      async (n, d) => {
        const { x, y } = centre(n.bounds);
        await d.tap(x, y);
        await d.replaceText(n, value);
      },
    );
  }

  /** Empties the element's text. */
  clear(options: TimeoutOption = {}): Promise<void> {
    return this.#action('clear', '', options, { enabled: true, editable: true }, async (n, d) => {
      const { x, y } = centre(n.bounds);
      await d.tap(x, y);
      await d.replaceText(n, '');
    });
  }

  /**
   * Presses a key (`Enter`, `Tab`, `Backspace`, a KEYCODE_ name or a number) with the
   * element focused: a text field is tapped first unless it has focus. Other views are not
   * tapped — a tap on a button would click it — so, as on a phone in touch mode, the key
   * goes to the view that has focus.
   */
  press(key: KeyName, options: TimeoutOption = {}): Promise<void> {
    const code = keycodeOf(key);
    return this.#action('press', formatValue(key), options, { enabled: true }, async (n, d) => {
      if (isTextField(n) && !n.focused) {
        const { x, y } = centre(n.bounds);
        await d.tap(x, y);
      }
      await d.key(code);
    });
  }

  /** Checks a checkbox or switch (taps it unless it is checked), then waits until it reads checked. */
  check(options: TimeoutOption = {}): Promise<void> {
    return this.#setChecked(true, 'check', '', options);
  }

  /** Unchecks a checkbox or switch (taps it unless it is unchecked), then waits until it reads unchecked. */
  uncheck(options: TimeoutOption = {}): Promise<void> {
    return this.#setChecked(false, 'uncheck', '', options);
  }

  /**
   * Checks or unchecks a checkbox or switch, as `checked` says: taps it only when its state
   * differs, then waits until it reads that state. Handy when the state comes from data:
   * `await row.setChecked(wanted)`.
   */
  setChecked(checked: boolean, options: TimeoutOption = {}): Promise<void> {
    if (typeof checked !== 'boolean') {
      throw new TypeError(`${this.#title}.setChecked takes true or false, got ${inspect(checked)}.`);
    }
    return this.#setChecked(checked, 'setChecked', String(checked), options);
  }

  #setChecked(checked: boolean, name: string, args: string, options: TimeoutOption): Promise<void> {
    return this.#engine.step(`${this.#title}.${name}(${args})`, async () => {
      let tapped = false;
      await this.#poll(name, options.timeout, async (snap, matches, stableSince) => {
        const n = this.#one(matches, snap);
        if (!n) return { waiting: 'waiting for the element to be attached' };
        if (!n.checkable) throw new Error(this.#notCheckable(name, n));
        if (n.checked === checked) return { value: true };
        if (tapped)
          return { waiting: `waiting for the element to become ${checked ? 'checked' : 'unchecked'}` };
        const ready = this.#actionable(n, stableSince, { enabled: true });
        if (ready) return { waiting: ready };
        const { x, y } = centre(n.bounds);
        await (await this.#engine.driver()).tap(x, y);
        tapped = true;
        return { waiting: 'tapped; waiting for the state to change' };
      });
    });
  }

  /**
   * Scrolls the nearest scrollable view that holds the element until the element shows
   * whole, then stops; an element outside every scrollable view is left where it is. While
   * the element is not attached (a RecyclerView keeps no views for rows off screen) the
   * largest scrollable view on screen is searched: towards its end first, then back.
   */
  scrollIntoView(options: TimeoutOption = {}): Promise<void> {
    return this.#engine.step(`${this.#title}.scrollIntoView()`, async () => {
      let direction: 1 | -1 = 1;
      let lastXml = '';
      await this.#poll('scrollIntoView', options.timeout, async (snap, matches) => {
        const n = this.#one(matches, snap);
        const holder = n ? scrollableAncestor(n) : null;
        const driver = await this.#engine.driver();
        if (n && isVisible(n)) {
          if (!holder) return { value: true };
          // Bounds are clipped to the list, so a row cut by an edge touches it and is
          // shorter than its siblings: move the list a little that way until the row comes
          // clear or the list stops moving.
          const cut = cutOf(n, holder);
          if (cut === null || snap.xml === lastXml) return { value: true };
          lastXml = snap.xml;
          await driver.swipe(...scrollSwipe(holder, cut.edge === 'bottom' ? 1 : -1, 0.25), 300);
          return { waiting: 'waiting for the element to show whole' };
        }
        const area = holder ?? largestScrollable(snap);
        if (!area) return { waiting: 'waiting for the element; nothing on screen scrolls' };
        if (snap.xml === lastXml) {
          // The list did not move: its end is reached; search the other way (once).
          if (direction === -1) return { waiting: 'scrolled both ways; the element never showed' };
          direction = -1;
        }
        lastXml = snap.xml;
        await driver.swipe(...scrollSwipe(area, direction, 0.5), 300);
        return { waiting: 'scrolling' };
      });
    });
  }

  /** Swipes across the element: `up` moves the finger up (the content follows it). */
  swipe(direction: SwipeDirection, options: TimeoutOption = {}): Promise<void> {
    return this.#action('swipe', formatValue(direction), options, {}, async (n, d) => {
      const b = n.bounds;
      const c = centre(b);
      const dx = Math.round((b.right - b.left) * 0.35);
      const dy = Math.round((b.bottom - b.top) * 0.35);
      const delta = { up: [0, -dy], down: [0, dy], left: [-dx, 0], right: [dx, 0] }[direction];
      await d.swipe(
        { x: c.x - delta[0]!, y: c.y - delta[1]! },
        { x: c.x + delta[0]!, y: c.y + delta[1]! },
        300,
      );
    });
  }

  // -------------------------------------------------------------------------------------
  // Queries

  /** The element's text (waits for it to be attached). */
  textContent(options: TimeoutOption = {}): Promise<string> {
    return this.#query('textContent', options, (n) => textOf(n));
  }

  /** An attribute of the element as the source writes it (`text`, `resource-id`, `content-desc`, `checked`, ...). */
  getAttribute(name: string, options: TimeoutOption = {}): Promise<string | null> {
    return this.#query(`getAttribute(${formatValue(name)})`, options, (n) => attributeOf(n, name));
  }

  isEnabled(options: TimeoutOption = {}): Promise<boolean> {
    return this.#query('isEnabled', options, (n) => n.enabled);
  }

  /** Whether a checkbox or switch is checked; throws for a view that cannot be checked. */
  isChecked(options: TimeoutOption = {}): Promise<boolean> {
    return this.#query('isChecked', options, (n) => {
      if (!n.checkable) throw new Error(this.#notCheckable('isChecked', n));
      return n.checked;
    });
  }

  /** Whether the element is on screen now (no waiting; false when nothing matches). */
  isVisible(): Promise<boolean> {
    return this.#engine.step(`${this.#title}.isVisible()`, () => this.#visibleNow());
  }

  /** Whether the element is not on screen now: nothing matches, or its view is not shown (no waiting). */
  isHidden(): Promise<boolean> {
    return this.#engine.step(`${this.#title}.isHidden()`, async () => !(await this.#visibleNow()));
  }

  /** One read: whether the one match shows (strict: several matches throw). */
  async #visibleNow(): Promise<boolean> {
    const snap = await this.#engine.snapshot();
    const n = this.#one(this.#resolve(snap), snap);
    return n !== null && isVisible(n);
  }

  /** The element's rectangle in screen pixels, or null when nothing matches. */
  async boundingBox(): Promise<BoundingBox | null> {
    const snap = await this.#engine.snapshot();
    const n = this.#one(this.#resolve(snap), snap);
    if (!n) return null;
    const b = n.bounds;
    return { x: b.left, y: b.top, width: b.right - b.left, height: b.bottom - b.top };
  }

  /** Waits until the element reaches `state` (default 'visible'). */
  waitFor(options: TimeoutOption & { state?: WaitForState } = {}): Promise<void> {
    const state = options.state ?? 'visible';
    return this.#engine.step(`${this.#title}.waitFor(${formatValue({ state })})`, async () => {
      await this.#poll('waitFor', options.timeout, (snap, matches) => {
        const n =
          state === 'detached' || state === 'hidden' ? (matches[0] ?? null) : this.#one(matches, snap);
        const done =
          state === 'attached'
            ? n !== null
            : state === 'detached'
              ? matches.length === 0
              : state === 'visible'
                ? n !== null && isVisible(n)
                : matches.every((m) => !isVisible(m));
        return Promise.resolve(
          done ? { value: true } : { waiting: `waiting for the element to be ${state}` },
        );
      });
    });
  }

  // -------------------------------------------------------------------------------------
  // Assertions (used by expect(locator) matchers)

  /**
   * @internal Polls `check` until it gives `pass !== isNot` or the time runs out; returns
   * the last outcome. Strict-mode violations throw.
   */
  async _expect(
    timeout: number,
    isNot: boolean,
    check: (matches: UiNode[], snap: UiSnapshot) => AssertionOutcome | Promise<AssertionOutcome>,
  ): Promise<AssertionOutcome> {
    const deadline = timeout > 0 ? Date.now() + timeout : Infinity;
    for (let attempt = 0; ; attempt++) {
      const snap = await this.#engine.snapshot();
      const outcome = await check(this.#resolve(snap), snap);
      if (outcome.pass !== isNot || Date.now() >= deadline) {
        if (outcome.pass === isNot && outcome.candidates === undefined && this.#resolve(snap).length === 0)
          outcome.candidates = describeCandidates(nearestCandidates(this.#steps, snap));
        return outcome;
      }
      await sleep(
        Math.min(BACKOFF[Math.min(attempt + 1, BACKOFF.length - 1)]!, Math.max(0, deadline - Date.now())),
      );
    }
  }

  /** @internal The one element, or a strict-mode error; null when nothing matches. */
  _single(matches: UiNode[], snap: UiSnapshot): UiNode | null {
    return this.#one(matches, snap);
  }

  /** @internal */
  get _engine(): UiEngine {
    return this.#engine;
  }

  // -------------------------------------------------------------------------------------
  // Machinery

  #resolve(snap: UiSnapshot): UiNode[] {
    return resolveSteps(snap.root, this.#steps);
  }

  /** This locator's one match in `snap`, or null (none, several, or no snapshot). */
  #single(snap: UiSnapshot | null): UiNode | null {
    if (!snap) return null;
    const matches = this.#resolve(snap);
    return matches.length === 1 ? matches[0]! : null;
  }

  #one(matches: UiNode[], snap: UiSnapshot): UiNode | null {
    if (matches.length > 1) throw new StrictModeViolationError(strictModeMessage(this.#title, matches, snap));
    return matches[0] ?? null;
  }

  /**
   * Says that `n` cannot be checked, and where its switch is: Settings rows and list items
   * are clickable containers whose switch or checkbox is a separate, non-clickable view.
   */
  #notCheckable(name: string, n: UiNode): string {
    let hint = 'Point the locator at the checkbox or switch itself.';
    for (let p: UiNode | null = n; p && p.parent; p = p.parent) {
      const found = descendants(p).filter((d) => d.checkable);
      if (found.length > 1) break;
      const control = found[0];
      if (!control) continue;
      const container = p === n ? this.#title : `its ${p.clickable ? 'row' : 'container'}`;
      hint =
        `${container === this.#title ? 'Its' : 'The'} checkable view inside ${container} is ${describeNode(control)}: ` +
        (p === n
          ? `use ${this.#title}.locator({ checkable: true }).`
          : `use a locator of the row, e.g. phone.locator({ clickable: true }).filter({ hasText: ${formatValue(textOf(n))} }).locator({ checkable: true }).`);
      break;
    }
    return `${this.#title}.${name}: the element is not checkable (${n.className}). ${hint}`;
  }

  /** Why `n` cannot be acted on yet, or null when it can. */
  #actionable(
    n: UiNode,
    stableSince: UiNode | null,
    needs: { enabled?: boolean; editable?: boolean },
  ): string | null {
    if (!isVisible(n)) return 'waiting for the element to be visible';
    if (needs.enabled && !n.enabled) return 'waiting for the element to be enabled';
    if (!stableSince || !sameBounds(stableSince.bounds, n.bounds))
      return 'waiting for the element to be stable';
    return null;
  }

  async #action(
    name: string,
    args: string,
    options: TimeoutOption,
    needs: { enabled?: boolean; editable?: boolean },
    perform: (node: UiNode, driver: UiDriver) => Promise<void>,
  ): Promise<void> {
    await this.#engine.step(`${this.#title}.${name}(${args})`, async () => {
      await this.#poll(name, options.timeout, async (snap, matches, previous) => {
        const n = this.#one(matches, snap);
        if (!n) return { waiting: 'waiting for the element to be attached' };
        // Checked before any tap: tapping a row to "focus" it would click it.
        if (needs.editable && !isTextField(n)) {
          throw new Error(
            `${this.#title}.${name}: the element is not editable (${n.className}); point the locator at a text field (android.widget.EditText).`,
          );
        }
        const notYet = this.#actionable(n, previous, needs);
        if (notYet) return { waiting: notYet };
        await perform(n, await this.#engine.driver());
        return { value: true };
      });
    });
  }

  async #query<T>(name: string, options: TimeoutOption, read: (n: UiNode) => T): Promise<T> {
    return this.#engine.step(`${this.#title}.${name}()`, () =>
      this.#poll(name, options.timeout, (snap, matches) => {
        const n = this.#one(matches, snap);
        return Promise.resolve(
          n ? { value: read(n) } : { waiting: 'waiting for the element to be attached' },
        );
      }),
    );
  }

  /**
   * The auto-wait loop: a snapshot per attempt, `attempt` decides. It also receives this
   * locator's single match from the previous snapshot, so "stable" means the same bounds
   * in two reads in a row. The first attempt's previous read is the engine's last one when
   * that is recent and no input was sent since (a launch or an assertion just read the
   * screen), else the first attempt reads again at once rather than waiting. A back end
   * whose reads settle first (UiDriver.settles) needs no second read.
   */
  async #poll<T>(
    name: string,
    timeout: number | undefined,
    attempt: (snap: UiSnapshot, matches: UiNode[], previous: UiNode | null) => Promise<Attempt<T>>,
  ): Promise<T> {
    const budget = timeout ?? this.#engine.options.actionTimeout;
    const deadline = budget > 0 ? Date.now() + budget : Infinity;
    let previous = this.#single(this.#engine.recentSnapshot());
    let waiting = '';
    let snap: UiSnapshot | null = null;
    for (let i = 0; ; i++) {
      snap = await this.#engine.snapshot();
      const matches = this.#resolve(snap);
      // A back end that reads only a settled screen (`uiautomator dump`) makes one read enough.
      if (this.#engine.settles) previous = this.#single(snap);
      const result = await attempt(snap, matches, previous);
      if ('value' in result && result.value !== undefined) return result.value;
      waiting = result.waiting ?? waiting;
      previous = matches.length === 1 ? matches[0]! : null;
      const now = Date.now();
      if (now >= deadline) break;
      const pause =
        waiting === 'waiting for the element to be stable' && i === 0
          ? 0
          : BACKOFF[Math.min(i + 1, BACKOFF.length - 1)]!;
      // No timer for no pause: even setTimeout(0) waits a millisecond or more.
      if (pause > 0) await sleep(Math.min(pause, deadline - now));
    }
    const matches = this.#resolve(snap);
    const app = foregroundPackage(snap);
    const seen =
      matches.length === 0
        ? `${this.#title} matched nothing on screen${app ? ` (${app} in front)` : ''}.\n${describeCandidates(nearestCandidates(this.#steps, snap))}`
        : `${this.#title} matched, but the last attempt was still ${waiting}.`;
    throw new UiTimeoutError(`${name}: Timeout ${budget}ms exceeded.\nCall log:\n  - ${waiting}\n${seen}`);
  }
}

function largestScrollable(snap: UiSnapshot): UiNode | null {
  const size = (b: UiNode['bounds']) => (b.right - b.left) * (b.bottom - b.top);
  let best: UiNode | null = null;
  for (const s of snap.nodes)
    if (s.scrollable && isVisible(s) && (!best || size(s.bounds) > size(best.bounds))) best = s;
  return best;
}

/**
 * A vertical swipe over `area` that scrolls its content by `share` of its height: towards
 * the end (finger up) for 1, towards the start for -1.
 */
function scrollSwipe(
  area: UiNode,
  direction: 1 | -1,
  share: number,
): [{ x: number; y: number }, { x: number; y: number }] {
  const b = area.bounds;
  const x = Math.round((b.left + b.right) / 2);
  const h = b.bottom - b.top;
  const low = Math.round(b.top + h * (0.5 + share / 2));
  const high = Math.round(b.top + h * (0.5 - share / 2));
  return direction === 1
    ? [
        { x, y: low },
        { x, y: high },
      ]
    : [
        { x, y: high },
        { x, y: low },
      ];
}

/** The root for phone.locator() and phone.getBy*(): every locator's title starts with `phone`. */
export function rootLocator(engine: UiEngine): Locator {
  return new Locator(engine, [], 'phone');
}
