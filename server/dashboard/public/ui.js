// @ts-check
/** The pieces every page shares: headings, error boxes, actions, copy buttons, polling. */
import { messageOf } from './api.js';
import { h } from './dom.js';

/**
 * The page's heading. It takes focus after each navigation (tabindex -1), so a keyboard or
 * screen reader user starts at the new page rather than at the link they left.
 * @param {string} title
 * @param {...(Node | string)} extra
 */
export function heading(title, ...extra) {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, title), ...extra);
}

/**
 * A card with a title: the block every page is made of.
 * @param {string | null} title
 * @param {...(Node | string | null | false)} children
 */
export function panel(title, ...children) {
  return h('section', { class: 'card panel' }, title === null ? null : h('h2', {}, title), ...children);
}

/** A box that says what went wrong in the API's own words (empty and hidden until then). */
export function errorBox() {
  const box = h('p', { class: 'error', role: 'alert', hidden: true });
  return {
    node: box,
    /** @param {unknown} err */
    show(err) {
      box.textContent = messageOf(err);
      box.hidden = false;
    },
    clear() {
      box.textContent = '';
      box.hidden = true;
    },
  };
}

/**
 * A button that runs an API action: disabled while it runs (no double submits), its error
 * shown in `errors`.
 * @param {string} label
 * @param {() => Promise<unknown>} action
 * @param {{ errors: ReturnType<typeof errorBox>, kind?: 'primary' | 'danger' | 'plain', busy?: string }} opts
 */
export function actionButton(label, action, { errors, kind = 'plain', busy }) {
  const button = h('button', { type: 'button', class: `button ${kind}` }, label);
  button.addEventListener('click', () => {
    errors.clear();
    button.disabled = true;
    if (busy) button.textContent = busy;
    action()
      .catch((err) => errors.show(err))
      .finally(() => {
        button.disabled = false;
        button.textContent = label;
      });
  });
  return button;
}

/**
 * A "Copy" button for a line of text (or for text fetched when clicked, for secrets the
 * page never shows). When the clipboard is not available it says so, so the user can
 * select the text by hand.
 * @param {string | (() => Promise<string>)} text
 * @param {string} [label]
 */
export function copyButton(text, label = 'Copy') {
  const status = h('span', { class: 'copy-status', role: 'status' });
  const button = h('button', { type: 'button', class: 'button plain' }, label);
  button.addEventListener('click', () => {
    status.textContent = '';
    Promise.resolve(typeof text === 'string' ? text : text())
      .then((t) => navigator.clipboard.writeText(t))
      .then(
        () => {
          status.textContent = 'Copied';
          setTimeout(() => {
            if (status.textContent === 'Copied') status.textContent = '';
          }, 2000);
        },
        (err) => {
          status.textContent = `Could not copy: ${messageOf(err)}`;
        },
      );
  });
  return h('span', { class: 'copy' }, button, status);
}

/**
 * Runs `tick` now (or first after `ms` when `wait`) and then every `ms` after the previous
 * run finished (never two at once), until `signal` aborts (the user left the page).
 * @param {number} ms
 * @param {() => Promise<void>} tick
 * @param {AbortSignal} signal
 * @param {{ wait?: boolean }} [opts] wait: the page has just run it itself
 */
export function every(ms, tick, signal, { wait = false } = {}) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const run = () => {
    if (signal.aborted) return;
    tick()
      .catch(() => {
        // each tick shows its own errors; the loop keeps going so the page recovers
      })
      .finally(() => {
        if (!signal.aborted) timer = setTimeout(run, ms);
      });
  };
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  if (wait) timer = setTimeout(run, ms);
  else run();
}

/**
 * A table that becomes one card per row on a phone-sized screen (dashboard.css reads
 * data-label for the row's captions there).
 * @param {string[]} columns
 * @param {Array<Array<Node | string | number>>} rows
 * @param {string} caption
 */
export function table(columns, rows, caption) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'records' },
      h('caption', { class: 'visually-hidden' }, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          columns.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((cells) =>
          h(
            'tr',
            {},
            cells.map((cell, i) => h('td', { 'data-label': columns[i] ?? '' }, cell)),
          ),
        ),
      ),
    ),
  );
}

/**
 * What a list shows when it has nothing yet, with what to do about it.
 * @param {string} title
 * @param {...(Node | string)} body
 */
export function empty(title, ...body) {
  return h('div', { class: 'empty' }, h('p', { class: 'empty-title' }, title), h('p', {}, ...body));
}
