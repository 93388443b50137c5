// @ts-check
/**
 * Building the page with DOM calls only. Text always goes in as text (never parsed as
 * HTML), so nothing an API answer holds can become markup, and the CSP can forbid inline
 * script and style: looks are classes from dashboard.css, never `style` attributes.
 */

/**
 * @typedef {Node | string | number | null | undefined | false} Child
 * @typedef {{ [name: string]: string | number | boolean | null | undefined | EventListener }} Attrs
 */

/**
 * An HTML element: `h('button', { class: 'primary', onclick: go }, 'End session')`.
 * `on*` attributes become listeners; `false`, `null` and `undefined` attributes are left out.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element (the history chart), built the same way.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {SVGElementTagNameMap[K]}
 */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {Attrs} attrs
 */
function setAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

/**
 * @param {Element} el
 * @param {(Child | Child[])[]} children
 */
function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/**
 * Replaces everything inside `el`.
 * @param {Element} el
 * @param {...(Child | Child[])} children
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * A definition list of label/value rows, the shape of every "facts" panel.
 * @param {Array<[string, Child | Child[]]>} rows
 */
export function facts(rows) {
  return h(
    'dl',
    { class: 'facts' },
    rows.map(([label, value]) => h('div', {}, h('dt', {}, label), h('dd', {}, value))),
  );
}
