// @ts-check
/**
 * Keys: "Create key" with a label shows the raw key once (with a copy button; the API never
 * shows it again), the list shows label, hint and when each key was made, and "Revoke"
 * stops a key at once.
 */
import { fill, h } from './dom.js';
import { dateTime } from './format.js';
import { actionButton, copyButton, empty, errorBox, heading, table } from './ui.js';

/**
 * @typedef {{ key_hash: string, label: string, hint: string, created: number }} KeyMeta
 */

/** @type {import('./app.js').Page} */
export async function keysPage({ api, signal }) {
  const errors = errorBox();
  const list = h('div', { class: 'key-list' });
  const created = h('div', { class: 'created-key', 'aria-live': 'polite' });

  const drawList = async () => {
    /** @type {KeyMeta[]} */
    const keys = await api.get('/me/keys', signal);
    if (signal.aborted) return;
    fill(
      list,
      keys.length === 0
        ? empty('No active keys', 'Create one above to use the CLI, the client or the test fixtures.')
        : table(
            ['Label', 'Hint', 'Created', ''],
            keys.map((k) => [
              k.label,
              h('code', {}, k.hint),
              dateTime(k.created),
              actionButton(
                'Revoke',
                async () => {
                  await api.delete(`/me/keys/${encodeURIComponent(k.key_hash)}`);
                  await drawList();
                },
                { errors, kind: 'danger', busy: 'Revoking…' },
              ),
            ]),
            'Active API keys',
          ),
    );
    // Each Revoke button names its key for screen readers (the visible text stays short).
    list.querySelectorAll('tbody tr').forEach((row, i) => {
      row.querySelector('button')?.setAttribute('aria-label', `Revoke ${keys[i]?.label ?? 'key'}`);
    });
  };

  const label = h('input', {
    id: 'key-label',
    name: 'label',
    type: 'text',
    required: true,
    maxlength: '200',
    autocomplete: 'off',
  });
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Create key');
  const formErrors = errorBox();
  const form = h(
    'form',
    { class: 'card form inline-form' },
    h('label', { for: 'key-label' }, 'Label'),
    h('div', { class: 'line' }, label, submit),
    h('p', { class: 'muted' }, 'Name it after where it will live, e.g. “CI main” or “laptop”.'),
    formErrors.node,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    formErrors.clear();
    const text = label.value.trim();
    if (!text) {
      formErrors.show('Give the key a label, so you can tell it apart when you revoke it.');
      return;
    }
    submit.disabled = true;
    api
      .post('/me/keys', { label: text })
      .then(async (/** @type {{ key: string, label: string }} */ k) => {
        label.value = '';
        fill(
          created,
          h(
            'div',
            { class: 'card notice' },
            h('h2', {}, `New key “${k.label}”`),
            h('p', {}, 'Copy it now: it is shown only this once.'),
            h('div', { class: 'line' }, h('code', { class: 'secret' }, k.key), copyButton(k.key)),
            h(
              'button',
              { type: 'button', class: 'button plain', onclick: () => created.replaceChildren() },
              'Done',
            ),
          ),
        );
        await drawList();
      })
      .catch((err) => formErrors.show(err))
      .finally(() => {
        submit.disabled = false;
      });
  });

  await drawList();
  return h(
    'section',
    {},
    heading('Keys'),
    form,
    created,
    errors.node,
    h('section', { class: 'panel' }, h('h2', {}, 'Active keys'), list),
  );
}
