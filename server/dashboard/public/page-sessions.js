// @ts-check
/**
 * Sessions: the account's live sessions, redrawn every second without a reload. Cards are
 * kept per session id between polls, so a picture is never blanked while its next one loads.
 * Pictures are frame.png fetched with the Authorization header and shown as blob: URLs;
 * each replaced URL is revoked, and all of them when the user leaves the page.
 */
import { facts, fill, h } from './dom.js';
import { deviceName, phoneKind, stateLabel, timeLeft, whereLabel } from './session-words.js';
import { duration } from './format.js';
import { empty, errorBox, every, heading } from './ui.js';

/** The list is read this often: a new session shows within 2 s. */
const LIST_EVERY_MS = 1000;
/** frame.png is captured at most every 2 s; asking more often only gets the same image. */
const PICTURE_EVERY_MS = 2000;

/**
 * @typedef {import('./session-words.js').LiveSession} LiveSession
 * @typedef {{ node: HTMLLIElement, body: HTMLDivElement, picture: HTMLImageElement,
 *   placeholder: HTMLDivElement, blobUrl: string | null, fetchedAt: number, loading: boolean }} Card
 */

/** @type {import('./app.js').Page} */
export function sessionsPage({ api, signal }) {
  const errors = errorBox();
  const list = h('ul', { class: 'session-list', 'aria-label': 'Live sessions' });
  const summary = h('p', { class: 'muted summary' }, 'Loading sessions…');
  const emptyState = empty(
    'No live sessions',
    'Start one from a test or with ',
    h('code', {}, 'phonelease lease'),
    '; it shows here within 2 seconds.',
  );
  emptyState.hidden = true;
  /** @type {Map<string, Card>} */
  const cards = new Map();

  /** @param {Card} card */
  const dropPicture = (card) => {
    if (card.blobUrl) URL.revokeObjectURL(card.blobUrl);
    card.blobUrl = null;
  };
  signal.addEventListener('abort', () => cards.forEach(dropPicture), { once: true });

  /** @param {Card} card @param {LiveSession} s */
  const refreshPicture = (card, s) => {
    if (s.state !== 'ready' || card.loading || Date.now() - card.fetchedAt < PICTURE_EVERY_MS) return;
    card.loading = true;
    card.fetchedAt = Date.now();
    api
      .image(`/sessions/${encodeURIComponent(s.id)}/frame.png`, signal)
      .then(
        (blob) => {
          if (signal.aborted || cards.get(s.id) !== card) return;
          const old = card.blobUrl;
          card.blobUrl = URL.createObjectURL(blob);
          card.picture.src = card.blobUrl;
          card.picture.hidden = false;
          card.placeholder.hidden = true;
          if (old) URL.revokeObjectURL(old);
        },
        () => {
          // no picture yet (503 no_frame) or the session just ended: the next poll says which
        },
      )
      .finally(() => {
        card.loading = false;
      });
  };

  every(
    LIST_EVERY_MS,
    async () => {
      /** @type {LiveSession[]} */
      let sessions;
      try {
        sessions = await api.get('/sessions', signal);
      } catch (err) {
        if (!signal.aborted) errors.show(err);
        return;
      }
      if (signal.aborted) return;
      errors.clear();
      const now = Date.now();
      const seen = new Set();
      for (const s of sessions) {
        seen.add(s.id);
        let card = cards.get(s.id);
        if (!card) {
          card = newCard(s);
          cards.set(s.id, card);
        }
        list.append(card.node); // keeps the API's order; moving a node keeps its picture
        drawCard(card, s);
        refreshPicture(card, s);
      }
      for (const [sid, card] of cards) {
        if (seen.has(sid)) continue;
        dropPicture(card);
        card.node.remove();
        cards.delete(sid);
      }
      emptyState.hidden = sessions.length > 0;
      summary.textContent = `${sessions.length} live ${sessions.length === 1 ? 'session' : 'sessions'} · updated ${new Date(now).toLocaleTimeString()}`;
    },
    signal,
  );

  return h('section', {}, heading('Sessions', summary), errors.node, emptyState, list);
}

/** @param {LiveSession} s @returns {Card} */
function newCard(s) {
  const href = `/dashboard/sessions/${encodeURIComponent(s.id)}`;
  const picture = h('img', { class: 'thumb', alt: `Screen of session ${s.id}`, hidden: true });
  const placeholder = h('div', { class: 'thumb placeholder', 'aria-hidden': 'true' });
  const body = h('div', { class: 'card-body' });
  const node = h(
    'li',
    { class: 'session-card card', 'data-sid': s.id },
    h('a', { class: 'thumb-link', href, tabindex: '-1', 'aria-hidden': 'true' }, picture, placeholder),
    body,
  );
  return { node, body, picture, placeholder, blobUrl: null, fetchedAt: 0, loading: false };
}

/** @param {Card} card @param {LiveSession} s */
function drawCard(card, s) {
  card.placeholder.textContent = stateLabel(s);
  if (s.state !== 'ready') {
    card.picture.hidden = true;
    card.placeholder.hidden = false;
  }
  fill(
    card.body,
    h(
      'h2',
      { class: 'card-title' },
      h('a', { href: `/dashboard/sessions/${encodeURIComponent(s.id)}` }, deviceName(s)),
      h('span', { class: `badge state-${s.state}` }, stateLabel(s)),
    ),
    h('p', { class: 'sid' }, s.id),
    facts([
      ['Status', whereLabel(s)],
      ['Age', duration(s.age_s)],
      ['Time left', timeLeft(s)],
      ['Phone', phoneKind(s)],
    ]),
  );
}
