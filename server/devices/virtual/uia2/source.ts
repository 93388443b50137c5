/**
 * The UiAutomator2 server's page source: an XML document whose elements are named after
 * view classes (`<android.widget.Button ...>`), under a `<hierarchy>` root. XPath queries
 * run over this same element tree, so what a test reads in the source is what it matches.
 */
import { formatBounds, xmlEscape } from '../ui/hierarchy.js';
import type { UiNodeInfo } from '../ui/types.js';

export interface SourceElement {
  tag: string;
  /** Attribute name -> value, in output order. */
  attrs: Map<string, string>;
  children: SourceElement[];
  parent: SourceElement | null;
  /** The view behind the element; null for the document and the hierarchy root. */
  node: UiNodeInfo | null;
  /** Position in document order (for sorting XPath results). */
  order: number;
}

/** Element names must be XML names; class names nearly always are already. */
export function tagFor(className: string): string {
  const t = (className || 'android.view.View').replace(/[^A-Za-z0-9._-]/g, '_');
  return /^[A-Za-z_]/.test(t) ? t : `_${t}`;
}

/** The attributes of one view, in the order the UiAutomator2 server writes them. */
export function nodeAttributes(n: UiNodeInfo, index: number): Map<string, string> {
  return new Map<string, string>([
    ['index', String(index)],
    ['package', n.packageName],
    ['class', n.className],
    ['text', n.text],
    ['resource-id', n.resourceId],
    ['content-desc', n.contentDesc],
    ['checkable', String(n.checkable)],
    ['checked', String(n.checked)],
    ['clickable', String(n.clickable)],
    ['enabled', String(n.enabled)],
    ['focusable', String(n.focusable)],
    ['focused', String(n.focused)],
    ['long-clickable', String(n.longClickable)],
    ['password', String(n.password)],
    ['scrollable', String(n.scrollable)],
    ['selected', String(n.selected)],
    ['bounds', formatBounds(n.bounds)],
    ['displayed', 'true'],
    ['hint', n.hint],
  ]);
}

/**
 * Builds the document for a window. With `only`, the document holds just that subtree
 * (searches from an element: `//x` then stays inside the element, as on the real server);
 * `beside`: nodes the server adds after the window (the toast it heard of).
 */
export function buildSource(
  root: UiNodeInfo,
  display: { width: number; height: number; rotation: number },
  only?: UiNodeInfo,
  beside: readonly UiNodeInfo[] = [],
): SourceElement {
  let order = 0;
  const doc: SourceElement = {
    tag: '#document',
    attrs: new Map(),
    children: [],
    parent: null,
    node: null,
    order: order++,
  };
  const convert = (n: UiNodeInfo, index: number, parent: SourceElement): SourceElement => {
    const el: SourceElement = {
      tag: tagFor(n.className),
      attrs: nodeAttributes(n, index),
      children: [],
      parent,
      node: n,
      order: order++,
    };
    el.children = n.children.map((c, i) => convert(c, i, el));
    return el;
  };
  if (only) {
    doc.children = [convert(only, indexInParent(root, only), doc)];
    return doc;
  }
  const hierarchy: SourceElement = {
    tag: 'hierarchy',
    attrs: new Map([
      ['index', '0'],
      ['class', 'hierarchy'],
      ['rotation', String(display.rotation)],
      ['width', String(display.width)],
      ['height', String(display.height)],
    ]),
    children: [],
    parent: doc,
    node: null,
    order: order++,
  };
  // Nodes beside the window (a toast) follow it under the hierarchy.
  hierarchy.children = [root, ...beside].map((n, i) => convert(n, i, hierarchy));
  doc.children = [hierarchy];
  return doc;
}

function indexInParent(root: UiNodeInfo, target: UiNodeInfo): number {
  const stack: UiNodeInfo[] = [root];
  while (stack.length) {
    const n = stack.pop();
    if (!n) break;
    const i = n.children.indexOf(target);
    if (i >= 0) return i;
    stack.push(...n.children);
  }
  return 0;
}

/** Pretty-printed XML, two-space indented like the real server's output. */
export function serializeSource(doc: SourceElement): string {
  const out: string[] = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"];
  const write = (el: SourceElement, depth: number) => {
    const pad = '  '.repeat(depth);
    const attrs = [...el.attrs].map(([k, v]) => ` ${k}="${xmlEscape(v)}"`).join('');
    if (el.children.length === 0) {
      out.push(`${pad}<${el.tag}${attrs} />`);
      return;
    }
    out.push(`${pad}<${el.tag}${attrs}>`);
    for (const c of el.children) write(c, depth + 1);
    out.push(`${pad}</${el.tag}>`);
  };
  for (const c of doc.children) write(c, 0);
  return out.join('\n');
}
