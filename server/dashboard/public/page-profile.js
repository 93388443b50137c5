// @ts-check
/**
 * Profile phone: the account's own phone, kept between sessions. Its state, the session
 * holding it, when it was saved, and "Reset profile phone" (refused while a session holds it;
 * the refusal's reason is shown in the API's words).
 */
import { ApiError } from './api.js';
import { facts, fill, h } from './dom.js';
import { dateTime } from './format.js';
import { actionButton, errorBox, every, heading, panel } from './ui.js';

/**
 * @typedef {{ id: string, state: 'empty' | 'stored' | 'saving', session: string | null,
 *   exact: boolean, saved_at: number }} Profile
 */

const STATES = /** @type {Record<string, string>} */ ({
  empty: 'Empty: the next profile session starts from a fresh phone',
  stored: 'Saved',
  saving: 'Saving…',
});

/** @type {import('./app.js').Page} */
export async function profilePage({ api, signal }) {
  const errors = errorBox();
  const resetErrors = errorBox();
  const details = h('div', {});
  const held = h('p', { class: 'notice', hidden: true });
  const done = h('p', { class: 'notice', role: 'status', hidden: true }, 'The profile phone was reset.');

  const draw = async () => {
    /** @type {{ profile: Profile }} */
    const me = await api.get('/me', signal);
    if (signal.aborted) return;
    const p = me.profile;
    fill(
      details,
      facts([
        ['State', STATES[p.state] ?? p.state],
        [
          'Held by',
          p.session
            ? h('a', { href: `/dashboard/sessions/${encodeURIComponent(p.session)}` }, p.session)
            : 'No session',
        ],
        ['Saved at', dateTime(p.saved_at)],
        ['Profile id', h('code', {}, p.id)],
      ]),
      p.exact
        ? null
        : h(
            'p',
            { class: 'muted' },
            'Its last session was lost before its save: the phone resumes from the save before it.',
          ),
    );
    held.hidden = !p.session;
    held.textContent = p.session
      ? 'A session holds the phone (or its save is still running), so it cannot be reset until that ends.'
      : '';
  };

  // Kept current: a session holding the phone may end while the page is open.
  await draw();
  every(
    2000,
    () =>
      draw().then(
        () => errors.clear(),
        (err) => {
          if (!signal.aborted) errors.show(err);
        },
      ),
    signal,
    { wait: true },
  );

  return h(
    'section',
    {},
    heading('Profile phone'),
    h(
      'p',
      { class: 'muted' },
      'Your own phone, kept between sessions: a session started with your profile id gets its apps, logins and screen back.',
    ),
    errors.node,
    panel(null, details),
    panel(
      'Reset',
      h(
        'p',
        { class: 'muted' },
        'Forgets the saved phone (apps, logins, data); the next profile session starts fresh.',
      ),
      held,
      actionButton(
        'Reset profile phone',
        async () => {
          done.hidden = true;
          try {
            await api.post('/me/profile/reset');
          } catch (err) {
            // The refusal names the holder in its body (`session`); say which one.
            if (err instanceof ApiError && typeof err.body.session === 'string') {
              throw new ApiError(
                err.status,
                err.code,
                `${err.message} It is held by session ${err.body.session}.`,
              );
            }
            throw err;
          }
          done.hidden = false;
          await draw();
        },
        { errors: resetErrors, kind: 'danger', busy: 'Resetting…' },
      ),
      resetErrors.node,
      done,
    ),
  );
}
