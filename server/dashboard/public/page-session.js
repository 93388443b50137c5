// @ts-check
/**
 * One live session: the owner viewer embedded (the phone, live, under the mouse), the ADB
 * endpoint with its unlock code shown only on demand, the view-only link to copy, "Revoke
 * ADB" and "End session". The viewer's URL is a secret: it goes into the iframe and
 * nowhere else (never the address bar), and it is renewed before it expires.
 */
import { facts, fill, h } from './dom.js';
import { duration } from './format.js';
import { deviceName, phoneKind, stateLabel, timeLeft, whereLabel } from './session-words.js';
import { actionButton, copyButton, errorBox, every, heading, panel } from './ui.js';

/** The session is re-read this often for its state and time left. */
const POLL_MS = 1000;
/** A viewer URL is replaced this long before it expires, so the picture never stops. */
const VIEWER_RENEW_S = 60;

/**
 * @typedef {import('./session-words.js').LiveSession} LiveSession
 * @typedef {{ enabled: boolean, host?: string, port?: number, code?: string, expires_at?: number }} AdbAccess
 */

/** @type {import('./app.js').Page} */
export async function sessionPage({ api, signal, params }) {
  const sid = params[0] ?? '';
  const path = `/sessions/${encodeURIComponent(sid)}`;
  const errors = errorBox();

  const badge = h('span', { class: 'badge' });
  const about = h('div', { class: 'about' });
  const viewer = h(
    'div',
    { class: 'viewer-slot' },
    h('p', { class: 'muted' }, 'The phone shows here once it is ready.'),
  );
  const adbPanel = h(
    'div',
    { class: 'panel-body' },
    h('p', { class: 'muted' }, 'ADB opens once the phone is ready.'),
  );
  const ended = h(
    'div',
    { class: 'notice ended', hidden: true, role: 'status' },
    h('h2', {}, 'This session has ended'),
    h(
      'p',
      {},
      'Its phone was handed back (or no live session of this account has this id). ',
      h('a', { href: '/dashboard/history' }, 'See it in History'),
      ' with its cost.',
    ),
  );

  /** @type {HTMLIFrameElement | null} */
  let frame = null;
  let viewerExpiresAt = 0;
  let adbLoaded = false;
  let gone = false;

  const shareErrors = errorBox();
  const actionErrors = errorBox();
  const live = h(
    'div',
    { class: 'session-layout' },
    h('div', { class: 'phone-column' }, viewer),
    h(
      'div',
      { class: 'side-column' },
      panel('About', about),
      panel('ADB', adbPanel),
      panel(
        'View-only link',
        h(
          'p',
          { class: 'muted' },
          'Anyone with this link can watch the phone, but not touch it, until the link expires (at most an hour) or the session ends.',
        ),
        copyButton(
          () =>
            api
              .get(`${path}/viewer`)
              .then((v) => String(v.url))
              .catch((err) => {
                shareErrors.show(err);
                throw err;
              }),
          'Copy view-only link',
        ),
        shareErrors.node,
      ),
      panel(
        'End',
        h('p', { class: 'muted' }, 'Hands the phone back and stops billing. A profile phone is saved first.'),
        // The poll below shows it ending and then gone, within a second.
        actionButton('End session', () => api.delete(path), {
          errors: actionErrors,
          kind: 'danger',
          busy: 'Ending…',
        }),
        actionErrors.node,
      ),
    ),
  );

  /** @param {LiveSession} s */
  const showViewer = async (s) => {
    if (s.state !== 'ready') {
      if (frame) {
        frame = null;
        fill(
          viewer,
          h(
            'p',
            { class: 'muted' },
            s.state === 'closing' ? 'The session is ending.' : 'The phone shows here once it is ready.',
          ),
        );
      }
      return;
    }
    if (frame && Date.now() / 1000 < viewerExpiresAt - VIEWER_RENEW_S) return;
    const v = await api.get(`${path}/owner-viewer`, signal);
    if (signal.aborted) return;
    viewerExpiresAt = v.expires_at;
    if (!frame) {
      frame = h('iframe', {
        class: 'viewer',
        title: `Live phone of session ${sid}`,
        referrerpolicy: 'no-referrer',
      });
      fill(viewer, frame);
    }
    frame.src = v.url;
  };

  const drawAdb = (/** @type {AdbAccess} */ adb) => {
    if (!adb.enabled || !adb.host || !adb.port || !adb.code) {
      fill(adbPanel, h('p', {}, 'ADB access is revoked for this session.'));
      return;
    }
    const line = `adb connect ${adb.host}:${adb.port}`;
    const code = adb.code;
    const codeSlot = h('div', { class: 'code-slot' });
    const toggle = h(
      'button',
      { type: 'button', class: 'button plain', 'aria-expanded': 'false' },
      'Show unlock code',
    );
    toggle.addEventListener('click', () => {
      const showing = toggle.getAttribute('aria-expanded') === 'true';
      toggle.setAttribute('aria-expanded', String(!showing));
      toggle.textContent = showing ? 'Show unlock code' : 'Hide unlock code';
      fill(
        codeSlot,
        showing ? null : h('div', { class: 'line' }, h('code', { class: 'secret' }, code), copyButton(code)),
      );
    });
    const revokeErrors = errorBox();
    fill(
      adbPanel,
      h('div', { class: 'line' }, h('code', {}, line), copyButton(line)),
      h(
        'p',
        { class: 'muted' },
        'The gateway first asks for the unlock code: a client sends the line ',
        h('code', {}, 'UNLOCK <code>'),
        ' before ADB’s own bytes. phonelease’s AdbTunnel does this and gives stock adb a local address.',
      ),
      h('div', { class: 'actions' }, toggle),
      codeSlot,
      h(
        'div',
        { class: 'actions' },
        actionButton(
          'Revoke ADB',
          async () => {
            await api.delete(`${path}/adb`);
            drawAdb({ enabled: false });
          },
          { errors: revokeErrors, kind: 'danger', busy: 'Revoking…' },
        ),
      ),
      revokeErrors.node,
    );
  };

  /** @param {LiveSession} s */
  const draw = (s) => {
    badge.textContent = stateLabel(s);
    badge.className = `badge state-${s.state}`;
    fill(
      about,
      facts([
        ['Phone', `${deviceName(s)} · ${phoneKind(s)}`],
        ['Status', whereLabel(s)],
        ['Age', duration(s.age_s)],
        ['Time left', timeLeft(s)],
      ]),
    );
  };

  const end = () => {
    gone = true;
    badge.textContent = 'Ended';
    badge.className = 'badge state-ended';
    frame = null;
    live.remove();
    ended.hidden = false;
  };

  const poll = async () => {
    if (gone) return;
    try {
      // Read from the live list rather than GET /sessions/{sid}: a session that ended is
      // simply not in it, where its own URL would answer 404, which the browser's console
      // reports as an error.
      /** @type {LiveSession[]} */
      const sessions = await api.get('/sessions', signal);
      if (signal.aborted) return;
      const s = sessions.find((x) => x.id === sid);
      if (!s) {
        end();
        return;
      }
      errors.clear();
      draw(s);
      await showViewer(s);
      if (s.state === 'ready' && !adbLoaded) {
        drawAdb(await api.get(`${path}/adb`, signal));
        adbLoaded = true;
      }
    } catch (err) {
      if (!signal.aborted) errors.show(err);
    }
  };

  // The first read decides between the page and "no such session"; then it keeps polling.
  await poll();
  every(POLL_MS, poll, signal, { wait: true });

  return h(
    'section',
    { class: 'session-page' },
    heading('Session', badge, h('span', { class: 'sid' }, sid)),
    errors.node,
    ended,
    live,
  );
}
