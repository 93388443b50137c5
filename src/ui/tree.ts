/**
 * The phone's UI tree as the engine sees it: parsed from either XML that Android tools
 * write — the UiAutomator2 server's page source (elements named after view classes under
 * `<hierarchy>`) or `uiautomator dump` (`<node class="...">` elements). Both carry the same
 * attributes, so one parser and one selector engine serve both back ends.
 */

export interface Bounds {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface UiNode {
  className: string;
  text: string;
  resourceId: string;
  contentDesc: string;
  packageName: string;
  hint: string;
  checkable: boolean;
  checked: boolean;
  clickable: boolean;
  enabled: boolean;
  focusable: boolean;
  focused: boolean;
  longClickable: boolean;
  password: boolean;
  scrollable: boolean;
  selected: boolean;
  /** False only when the source says so (the UiAutomator2 `displayed` attribute). */
  displayed: boolean;
  bounds: Bounds;
  /** Every attribute as written, for getAttribute() and XPath. */
  attributes: Readonly<Record<string, string>>;
  /** The XML element name (a class name in UiAutomator2 sources, `node` in dumps). */
  tag: string;
  parent: UiNode | null;
  children: UiNode[];
  /** Position in document order. */
  order: number;
}

export interface UiSnapshot {
  /** The XML as the phone returned it (attached to failed tests). */
  xml: string;
  /** A synthetic root above the windows (the `<hierarchy>` element). */
  root: UiNode;
  /** Every view in document order (the root excluded). */
  nodes: UiNode[];
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function unescapeXml(value: string): string {
  // Most values have no entity: skip the regex for them (a tree has hundreds of values).
  if (!value.includes('&')) return value;
  return value.replace(/&(#x[0-9a-fA-F]+|#\d+|\w+);/g, (whole, name: string) => {
    if (name.startsWith('#x')) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(parseInt(name.slice(1), 10));
    return ENTITIES[name] ?? whole;
  });
}

function parseBounds(value: string | undefined): Bounds {
  const m = /\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]/.exec(value ?? '');
  if (!m) return { left: 0, top: 0, right: 0, bottom: 0 };
  return { left: Number(m[1]), top: Number(m[2]), right: Number(m[3]), bottom: Number(m[4]) };
}

function makeNode(tag: string, attrs: Record<string, string>, parent: UiNode | null, order: number): UiNode {
  const flag = (name: string) => attrs[name] === 'true';
  return {
    className: attrs.class ?? (tag === 'node' ? '' : tag),
    text: attrs.text ?? '',
    resourceId: attrs['resource-id'] ?? '',
    contentDesc: attrs['content-desc'] ?? '',
    packageName: attrs.package ?? '',
    hint: attrs.hint ?? '',
    checkable: flag('checkable'),
    checked: flag('checked'),
    clickable: flag('clickable'),
    enabled: attrs.enabled !== 'false',
    focusable: flag('focusable'),
    focused: flag('focused'),
    longClickable: flag('long-clickable'),
    password: flag('password'),
    scrollable: flag('scrollable'),
    selected: flag('selected'),
    displayed: attrs.displayed !== 'false',
    bounds: parseBounds(attrs.bounds),
    attributes: attrs,
    tag,
    parent,
    children: [],
    order,
  };
}

const TOKEN =
  /<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<!DOCTYPE[^>]*>|<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTRIBUTE = /([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/**
 * Parses a hierarchy. The XML is machine-written (no mixed content, no namespaces), so a
 * tag tokenizer is enough; anything else between tags is ignored.
 */
export function parseHierarchy(xml: string): UiSnapshot {
  const root = makeNode('hierarchy', {}, null, 0);
  const nodes: UiNode[] = [];
  const stack: UiNode[] = [root];
  let sawHierarchy = false;
  for (const m of xml.matchAll(TOKEN)) {
    const [, closing, tag, rawAttrs, selfClosing] = m;
    if (!tag) continue;
    const attrs: Record<string, string> = {};
    if (!closing)
      for (const a of (rawAttrs ?? '').matchAll(ATTRIBUTE)) attrs[a[1]!] = unescapeXml(a[2] ?? a[3] ?? '');
    if (tag === 'hierarchy') {
      // The root element itself is the synthetic root; its attributes tell the screen's
      // rotation (both sources) and size (the UiAutomator2 server's).
      sawHierarchy = true;
      if (!closing) root.attributes = attrs;
      continue;
    }
    if (closing) {
      if (stack.length > 1) stack.pop();
      continue;
    }
    const parent = stack[stack.length - 1]!;
    const node = makeNode(tag, attrs, parent, nodes.length + 1);
    parent.children.push(node);
    nodes.push(node);
    if (!selfClosing) stack.push(node);
  }
  if (!sawHierarchy && nodes.length === 0) {
    throw new Error(`The phone returned no UI hierarchy (got ${JSON.stringify(xml.slice(0, 120))}).`);
  }
  return { xml, root, nodes };
}

/** Every view below `node`, in document order. */
export function descendants(node: UiNode): UiNode[] {
  const out: UiNode[] = [];
  const walk = (n: UiNode) => {
    for (const c of n.children) {
      out.push(c);
      walk(c);
    }
  };
  walk(node);
  return out;
}

/**
 * Text fields: the classes that take typed text (Compose text fields and inputs in a
 * WebView report android.widget.EditText too).
 */
export function isTextField(n: UiNode): boolean {
  return /EditText|AutoCompleteTextView|SearchView/.test(n.className);
}

/**
 * A text field's value as the phone reports it: its text, but '' while the field is empty
 * and shows its hint (Android then reports the hint as the text; the UiAutomator2 server
 * writes the hint beside it, a dump does not). A password field reports one • per character.
 */
export function fieldValue(n: UiNode): string {
  return n.hint !== '' && n.text === n.hint ? '' : n.text;
}

/** Playwright's visibility: shown, with a non-empty box. */
export function isVisible(n: UiNode): boolean {
  const b = n.bounds;
  return n.displayed && b.right > b.left && b.bottom > b.top;
}

/** The text a person reads in a view: its own text, else its children's joined by spaces. */
export function textOf(node: UiNode): string {
  if (node.text) return node.text;
  return node.children
    .map(textOf)
    .filter((t) => t.length > 0)
    .join(' ');
}

export function centre(b: Bounds): { x: number; y: number } {
  return { x: Math.round((b.left + b.right) / 2), y: Math.round((b.top + b.bottom) / 2) };
}

export function sameBounds(a: Bounds, b: Bounds): boolean {
  return a.left === b.left && a.top === b.top && a.right === b.right && a.bottom === b.bottom;
}

/** A one-line description of a view for error messages: class, id, text and desc. */
export function describeNode(node: UiNode): string {
  const cls = node.className.split('.').pop() || node.tag;
  const parts = [cls];
  if (node.resourceId) parts.push(`id=${node.resourceId.replace(/^[^:]+:id\//, '')}`);
  if (node.text) parts.push(`text=${JSON.stringify(node.text)}`);
  if (node.contentDesc) parts.push(`desc=${JSON.stringify(node.contentDesc)}`);
  const b = node.bounds;
  parts.push(`[${b.left},${b.top}][${b.right},${b.bottom}]`);
  return parts.join(' ');
}
