// @ts-check
/**
 * Sign in: with the one-time link `phonelease dashboard` prints (its token is in the URL
 * fragment, which never reaches a server log or a Referer, and is removed from the address
 * bar before anything else happens), or with an API key typed into the form (sent in a POST
 * body, never in a URL).
 */
import { ApiError } from './api.js';
import { fill, h } from './dom.js';
import { errorBox, heading } from './ui.js';

/** What a refused link is called, by the API's code. */
const LINK_REFUSED = /** @type {Record<string, string>} */ ({
  sign_in_link_used: 'This sign-in link was already used',
  sign_in_link_expired: 'This sign-in link has expired',
});

/** @type {import('./app.js').Page} */
export async function signInPage(ctx) {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (location.hash) history.replaceState(null, '', location.pathname);

  const section = h('section', { class: 'sign-in' });
  if (token) {
    try {
      await ctx.api.signInWith({ link: token });
      ctx.signedIn();
      return section;
    } catch (err) {
      const code = err instanceof ApiError ? err.code : '';
      section.append(
        heading(LINK_REFUSED[code] ?? 'This sign-in link is not valid'),
        h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err)),
        h('h2', {}, 'Sign in with an API key'),
        keyForm(ctx),
      );
      return section;
    }
  }
  fill(
    section,
    heading('Sign in'),
    ctx.notice ? h('p', { class: 'notice', role: 'status' }, ctx.notice) : null,
    h(
      'p',
      { class: 'muted' },
      'Open the one-time link that ',
      h('code', {}, 'phonelease dashboard --email YOU'),
      ' prints, or sign in with one of your API keys.',
    ),
    keyForm(ctx),
  );
  return section;
}

/** @param {import('./app.js').PageContext} ctx */
function keyForm(ctx) {
  const errors = errorBox();
  const input = h('input', {
    id: 'api-key',
    name: 'key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    placeholder: 'pck_…',
  });
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card form' },
    h('label', { for: 'api-key' }, 'API key'),
    input,
    submit,
    errors.node,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    errors.clear();
    const key = input.value.trim();
    if (!key) {
      errors.show('Paste an API key (it starts with pck_).');
      return;
    }
    submit.disabled = true;
    ctx.api
      .signInWith({ key })
      .then(
        () => ctx.signedIn(),
        (err) => {
          errors.show(err);
          input.focus();
        },
      )
      .finally(() => {
        submit.disabled = false;
        input.value = '';
      });
  });
  return form;
}
