/**
 * Selectors: the shape of Playwright's AndroidSelector (plus `textContains`), or an
 * `xpath=...` string, evaluated on the host over a snapshot of the UI tree. Matching on the
 * host keeps one engine for both back ends (UiAutomator2 source and `uiautomator dump`),
 * and lets a failed wait list what is on screen instead.
 */
import { evaluateXPath } from './xpath.js';
import { descendants, textOf, type UiNode } from './tree.js';

export type TextMatch = string | RegExp;

/** Which views to match; every given field must hold. Strings match exactly, RegExps by search. */
export interface AndroidSelector {
  /** The view's text. */
  text?: TextMatch;
  /** A substring of the view's text (case-sensitive). */
  textContains?: string;
  /** The resource id: full (`pkg:id/name`) or short (`name`, resolved in the view's own app). */
  res?: TextMatch;
  /** The content description (accessibility id). */
  desc?: TextMatch;
  /** The class name, e.g. `android.widget.Button`. */
  clazz?: TextMatch;
  /** The package the view belongs to. */
  pkg?: TextMatch;
  checkable?: boolean;
  checked?: boolean;
  clickable?: boolean;
  enabled?: boolean;
  focusable?: boolean;
  focused?: boolean;
  longClickable?: boolean;
  scrollable?: boolean;
  selected?: boolean;
  /** Only views with a direct child matching this selector. */
  hasChild?: { selector: AndroidSelector };
  /** Only views with a descendant matching this selector (at most maxDepth levels down). */
  hasDescendant?: { selector: AndroidSelector; maxDepth?: number };
}

/** What phone.locator() takes: a selector object or `xpath=//...`. */
export type Selector = AndroidSelector | `xpath=${string}`;

/** How getByText() matches: substring, case-insensitive, whitespace-normalised unless exact. */
export interface TextQuery {
  text: TextMatch;
  exact: boolean;
}

/** One step of a locator chain, applied to the views the previous step produced. */
export type Step =
  | { kind: 'select'; selector: AndroidSelector }
  | { kind: 'xpath'; expression: string }
  | { kind: 'text'; query: TextQuery }
  | { kind: 'nth'; index: number }
  | {
      kind: 'filter';
      hasText?: TextMatch;
      hasNotText?: TextMatch;
      /** Keeps the views that hold a match of these steps (resolved from the view). */
      has?: readonly Step[];
      hasNot?: readonly Step[];
    }
  /** The views that also match these steps, resolved from the same scope. */
  | { kind: 'and'; steps: readonly Step[] }
  /** The views that match either chain, resolved from the same scope. */
  | { kind: 'or'; steps: readonly Step[] };

function matchText(value: string, m: TextMatch): boolean {
  if (typeof m === 'string') return value === m;
  m.lastIndex = 0;
  return m.test(value);
}

function normalise(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** getByText semantics (Playwright's): exact, or a case-insensitive substring; RegExp by search. */
export function matchTextQuery(value: string, q: TextQuery): boolean {
  if (q.text instanceof RegExp) {
    q.text.lastIndex = 0;
    return q.text.test(value);
  }
  if (q.exact) return value === q.text;
  return normalise(value).toLowerCase().includes(normalise(q.text).toLowerCase());
}

function matchResourceId(node: UiNode, m: TextMatch): boolean {
  if (typeof m !== 'string') return matchText(node.resourceId, m);
  if (m.includes(':id/')) return node.resourceId === m;
  // A short id resolves in the app the view belongs to: `username` is `<its package>:id/username`.
  return node.resourceId === `${node.packageName}:id/${m}` || node.resourceId === m;
}

const FLAGS = [
  'checkable',
  'checked',
  'clickable',
  'enabled',
  'focusable',
  'focused',
  'longClickable',
  'scrollable',
  'selected',
] as const;

export function matchesSelector(node: UiNode, s: AndroidSelector): boolean {
  if (s.text !== undefined && !matchText(node.text, s.text)) return false;
  if (s.textContains !== undefined && !node.text.includes(s.textContains)) return false;
  if (s.res !== undefined && !matchResourceId(node, s.res)) return false;
  if (s.desc !== undefined && !matchText(node.contentDesc, s.desc)) return false;
  if (s.clazz !== undefined && !matchText(node.className, s.clazz)) return false;
  if (s.pkg !== undefined && !matchText(node.packageName, s.pkg)) return false;
  for (const flag of FLAGS) if (s[flag] !== undefined && node[flag] !== s[flag]) return false;
  if (s.hasChild && !node.children.some((c) => matchesSelector(c, s.hasChild!.selector))) return false;
  if (s.hasDescendant) {
    const { selector, maxDepth } = s.hasDescendant;
    const found = (n: UiNode, depth: number): boolean =>
      n.children.some(
        (c) =>
          matchesSelector(c, selector) ||
          (maxDepth === undefined || depth < maxDepth ? found(c, depth + 1) : false),
      );
    if (!found(node, 1)) return false;
  }
  return true;
}

/**
 * Applies a chain to `root` (a snapshot's root, or a candidate view for `filter({ has })`);
 * the result is in document order without duplicates.
 */
export function resolveSteps(root: UiNode, steps: readonly Step[]): UiNode[] {
  let current: UiNode[] = [root];
  for (const step of steps) {
    switch (step.kind) {
      case 'select':
      case 'text': {
        const seen = new Set<UiNode>();
        for (const scope of current)
          for (const n of descendants(scope))
            if (
              step.kind === 'select' ? matchesSelector(n, step.selector) : matchTextQuery(n.text, step.query)
            )
              seen.add(n);
        current = [...seen].sort((a, b) => a.order - b.order);
        break;
      }
      case 'xpath': {
        const seen = new Set<UiNode>();
        for (const scope of current) for (const n of evaluateXPath(step.expression, scope)) seen.add(n);
        current = [...seen].sort((a, b) => a.order - b.order);
        break;
      }
      case 'nth': {
        const picked = step.index < 0 ? current[current.length + step.index] : current[step.index];
        current = picked ? [picked] : [];
        break;
      }
      case 'filter':
        current = current.filter((n) => {
          const text = textOf(n);
          const has = (m: TextMatch) => matchTextQuery(text, { text: m, exact: false });
          if (step.hasText !== undefined && !has(step.hasText)) return false;
          if (step.hasNotText !== undefined && has(step.hasNotText)) return false;
          // Playwright's rule: the inner locator is looked for inside the candidate, not from the root.
          if (step.has && resolveSteps(n, step.has).length === 0) return false;
          if (step.hasNot && resolveSteps(n, step.hasNot).length > 0) return false;
          return true;
        });
        break;
      case 'and': {
        const other = new Set(resolveSteps(root, step.steps));
        current = current.filter((n) => other.has(n));
        break;
      }
      case 'or':
        current = [...new Set([...current, ...resolveSteps(root, step.steps)])].sort(
          (a, b) => a.order - b.order,
        );
        break;
    }
  }
  return current;
}

export function selectorStep(selector: Selector): Step {
  if (typeof selector === 'string') {
    if (!selector.startsWith('xpath=')) {
      throw new TypeError(
        `A string selector must start with "xpath=" (got ${JSON.stringify(selector)}); use an object like { text: 'Log in' } or { res: 'username' } otherwise.`,
      );
    }
    return { kind: 'xpath', expression: selector.slice('xpath='.length) };
  }
  return { kind: 'select', selector };
}

// ---------------------------------------------------------------------------------------
// Titles: how a locator prints in steps and errors (`phone.getByText('Log in')`)

export function formatValue(value: unknown): string {
  if (value instanceof RegExp) return String(value);
  // A locator (in `filter({ has })`) prints as it is written: `phone.getById('title')`.
  if (typeof value === 'object' && value !== null && value.toString !== Object.prototype.toString)
    return String(value);
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{ ${entries.map(([k, v]) => `${k}: ${formatValue(v)}`).join(', ')} }`;
  }
  return String(value);
}
