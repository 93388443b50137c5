// @ts-check
/** Account: balance, rate, session limit and slots in use, whether it can rent and why not. */
import { facts, h } from './dom.js';
import { dateTime, money } from './format.js';
import { heading, panel } from './ui.js';

/** @type {import('./app.js').Page} */
export async function accountPage({ api, signal }) {
  /** @type {{ uid: string, email: string, name: string, created: number, balance_cents: number,
   *   price_cents_per_minute: number, billing_mode: string, session_limit: number,
   *   active_session_count: number, available_session_slots: number, can_rent: boolean,
   *   rent_blocked_reason?: string }} */
  const me = await api.get('/me', signal);
  const metered = me.billing_mode === 'metered';
  return h(
    'section',
    {},
    heading('Account'),
    h(
      'div',
      { class: 'grid' },
      panel(
        me.name || me.email,
        facts([
          ['Email', me.email],
          ['Account id', h('code', {}, me.uid)],
          ['Created', dateTime(me.created)],
        ]),
      ),
      panel(
        'Credit',
        facts([
          ['Balance', money(me.balance_cents)],
          ['Rate', `${money(me.price_cents_per_minute)} per minute`],
          [
            'Billing',
            metered
              ? 'Metered: each started minute of a ready phone is billed'
              : 'Disabled: sessions cost nothing',
          ],
        ]),
      ),
      panel(
        'Sessions',
        facts([
          ['Session limit', String(me.session_limit)],
          [
            'Slots in use',
            `${me.active_session_count} of ${me.session_limit} (${me.available_session_slots} free)`,
          ],
          [
            'Can rent',
            me.can_rent
              ? 'Yes'
              : h(
                  'span',
                  { class: 'refused' },
                  `No: ${me.rent_blocked_reason ?? 'rentals are not open to this account.'}`,
                ),
          ],
        ]),
      ),
    ),
  );
}
