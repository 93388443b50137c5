// @ts-check
/**
 * The dashboard's entry module. The server answers every page path with one shell
 * (index.html); this module picks the page from location.pathname, moves between pages with
 * history.pushState, and gives each page an AbortSignal that ends its polling when the user
 * leaves it.
 */
import { Api } from './api.js';
import { fill, h } from './dom.js';
import { accountPage } from './page-account.js';
import { fleetPage } from './page-fleet.js';
import { historyPage } from './page-history.js';
import { keysPage } from './page-keys.js';
import { profilePage } from './page-profile.js';
import { sessionPage } from './page-session.js';
import { sessionsPage } from './page-sessions.js';
import { signInPage } from './page-sign-in.js';
import { heading } from './ui.js';

/**
 * What a page gets: the API, where to draw, a signal that aborts when the user leaves,
 * and how to go elsewhere.
 * @typedef {{
 *   api: Api,
 *   signal: AbortSignal,
 *   params: string[],
 *   navigate: (path: string, opts?: { replace?: boolean, notice?: string }) => void,
 *   notice: string | null,
 *   signedIn: (next?: string) => void,
 * }} PageContext
 * @typedef {(ctx: PageContext) => Node | Promise<Node>} Page
 * @typedef {{
 *   pattern: RegExp,
 *   title: string,
 *   page: Page,
 *   nav?: { href: string, who: 'all' | 'operator' },
 *   open?: boolean,
 * }} Route
 */

export const BASE = '/dashboard';
const NEXT_KEY = 'phonelease.dashboard.next';

/** @type {Route[]} */
const ROUTES = [
  { pattern: /^\/sign-in$/, title: 'Sign in', page: signInPage, open: true },
  { pattern: /^\/sessions$/, title: 'Sessions', page: sessionsPage, nav: { href: '/sessions', who: 'all' } },
  { pattern: /^\/sessions\/([^/]+)$/, title: 'Session', page: sessionPage },
  { pattern: /^\/history$/, title: 'History', page: historyPage, nav: { href: '/history', who: 'all' } },
  { pattern: /^\/keys$/, title: 'Keys', page: keysPage, nav: { href: '/keys', who: 'all' } },
  {
    pattern: /^\/profile$/,
    title: 'Profile phone',
    page: profilePage,
    nav: { href: '/profile', who: 'all' },
  },
  { pattern: /^\/account$/, title: 'Account', page: accountPage, nav: { href: '/account', who: 'all' } },
  { pattern: /^\/fleet$/, title: 'Fleet', page: fleetPage, nav: { href: '/fleet', who: 'operator' } },
];

/** @type {Page} */
const notFoundPage = () =>
  h(
    'section',
    {},
    heading('Page not found'),
    h(
      'p',
      {},
      'There is no dashboard page here. ',
      h('a', { href: `${BASE}/sessions` }, 'Go to Sessions'),
      '.',
    ),
  );

class Dashboard {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    /** @type {AbortController | null} */
    this.current = null;
    /** @type {string | null} */
    this.pendingNotice = null;
    /** The first page of a visit starts at the top; later ones move the focus to their heading. */
    this.moved = false;
    this.api = new Api({ storage: sessionStorage, onSignedOut: (reason) => this.signedOut(reason) });
    this.header = h('header', { class: 'topbar' });
    this.main = h('main', { id: 'main', class: 'content' });
    fill(root, h('a', { class: 'skip', href: '#main' }, 'Skip to content'), this.header, this.main);
    addEventListener('popstate', () => {
      this.moved = true;
      this.render();
    });
    // Links inside the dashboard move without a reload; anything else (a new tab, another
    // site, a modified click) is left to the browser.
    document.addEventListener('click', (ev) => {
      const a = ev.target instanceof Element ? ev.target.closest('a') : null;
      if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
      if (a.target || a.origin !== location.origin || !a.pathname.startsWith(`${BASE}/`)) return;
      if (a.pathname === location.pathname && a.hash) return;
      ev.preventDefault();
      this.navigate(a.pathname);
    });
  }

  /**
   * @param {string} path
   * @param {{ replace?: boolean, notice?: string }} [opts]
   */
  navigate(path, { replace = false, notice } = {}) {
    if (replace) history.replaceState(null, '', path);
    else history.pushState(null, '', path);
    this.pendingNotice = notice ?? null;
    this.moved = true;
    this.render();
  }

  /** @param {string} reason */
  signedOut(reason) {
    if (location.pathname === `${BASE}/sign-in`) return;
    sessionStorage.setItem(NEXT_KEY, location.pathname);
    this.navigate(`${BASE}/sign-in`, { replace: true, notice: reason });
  }

  /** @param {string} [next] */
  signedIn(next) {
    const stored = sessionStorage.getItem(NEXT_KEY);
    sessionStorage.removeItem(NEXT_KEY);
    const target = next ?? (stored && stored.startsWith(`${BASE}/`) ? stored : `${BASE}/sessions`);
    this.navigate(target === `${BASE}/sign-in` ? `${BASE}/sessions` : target, { replace: true });
  }

  render() {
    this.current?.abort();
    const controller = new AbortController();
    this.current = controller;
    const notice = this.pendingNotice;
    this.pendingNotice = null;

    let rest = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
    if (rest === '' || rest === '/') rest = '/sessions';
    const route = ROUTES.find((r) => r.pattern.test(rest));
    const params = route ? (route.pattern.exec(rest) ?? []).slice(1).map(decodeURIComponent) : [];
    const signIn = this.api.signIn;

    if (!route?.open && !signIn) {
      if (route) sessionStorage.setItem(NEXT_KEY, location.pathname);
      history.replaceState(null, '', `${BASE}/sign-in`);
      this.render();
      return;
    }
    this.drawHeader(route);
    document.title = `${route?.title ?? 'Not found'} · phonelease`;

    /** @type {PageContext} */
    const ctx = {
      api: this.api,
      signal: controller.signal,
      params,
      notice,
      navigate: (path, opts) => this.navigate(path, opts),
      signedIn: (next) => this.signedIn(next),
    };
    fill(this.main, h('p', { class: 'loading' }, 'Loading…'));
    Promise.resolve()
      .then(() => (route ? route.page(ctx) : notFoundPage(ctx)))
      .then(
        (node) => {
          if (controller.signal.aborted) return;
          fill(
            this.main,
            notice && !route?.open ? h('p', { class: 'notice', role: 'status' }, notice) : null,
            node,
          );
          if (this.moved) this.main.querySelector('h1')?.focus({ preventScroll: true });
        },
        (err) => {
          if (controller.signal.aborted) return;
          fill(
            this.main,
            h(
              'section',
              {},
              heading(route?.title ?? 'Error'),
              h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err)),
            ),
          );
        },
      );
  }

  /** @param {Route | undefined} route */
  drawHeader(route) {
    const signIn = this.api.signIn;
    if (!signIn || route?.open) {
      fill(this.header, h('span', { class: 'brand' }, 'phonelease'));
      return;
    }
    const here = location.pathname;
    fill(
      this.header,
      h('a', { class: 'brand', href: `${BASE}/sessions` }, 'phonelease'),
      h(
        'nav',
        { 'aria-label': 'Dashboard' },
        h(
          'ul',
          {},
          ROUTES.map(({ nav, title }) => {
            if (!nav || (nav.who === 'operator' && !signIn.account.operator)) return null;
            const href = `${BASE}${nav.href}`;
            // A session's own page belongs to Sessions.
            const current = here === href || here.startsWith(`${href}/`);
            return h('li', {}, h('a', { href, 'aria-current': current ? 'page' : null }, title));
          }),
        ),
      ),
      h(
        'div',
        { class: 'who' },
        h('span', { class: 'email', title: signIn.account.email }, signIn.account.email),
        h(
          'button',
          {
            type: 'button',
            class: 'button plain',
            onclick: () => {
              // The page's polling stops first, so it does not see the token end and
              // report a sign-in that ran out instead of this sign-out.
              this.current?.abort();
              this.api
                .signOut()
                .catch(() => {
                  // signed out here whatever the server answered
                })
                .finally(() => {
                  sessionStorage.removeItem(NEXT_KEY);
                  this.navigate(`${BASE}/sign-in`, { notice: 'You are signed out.' });
                });
            },
          },
          'Sign out',
        ),
      ),
    );
  }
}

new Dashboard(document.body).render();
