// @ts-check
/**
 * Fleet (operator accounts only; the API answers 404 to others): phones by state, the warm
 * pool, the boot queue, boot times by how the phone started, and on a deployment each
 * device host. The same figures /metrics serves, refreshed every 2 s.
 */
import { ApiError } from './api.js';
import { facts, fill, h } from './dom.js';
import { dateTime } from './format.js';
import { empty, errorBox, every, heading, panel, table } from './ui.js';

/**
 * @typedef {{ count: number, p50_ms: number | null, p95_ms: number | null }} BootTimes
 * @typedef {{
 *   phones: Record<string, number>,
 *   capacity?: number,
 *   pool: { target: number, ready: number, booting?: number },
 *   queue: { queued: number, boot_slots: number, booting: number },
 *   boot_times: Record<string, BootTimes>,
 *   hosts: Array<{ id: string, url: string, phones: number, boot_slots: number, sessions?: number,
 *     last_heartbeat: number }> | null,
 * }} Fleet
 */

const SOURCES = /** @type {const} */ ([
  ['cold', 'Cold boot'],
  ['snapshot', 'From snapshot'],
  ['pool', 'From the warm pool'],
]);

/** "closing" → "Closing": the API's state names as row labels. @param {string} word */
const sentence = (word) => word.charAt(0).toUpperCase() + word.slice(1).replace(/_/g, ' ');

/** @param {number | null | undefined} ms */
const elapsed = (ms) =>
  ms === null || ms === undefined ? '–' : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;

/** @type {import('./app.js').Page} */
export async function fleetPage({ api, signal }) {
  const errors = errorBox();
  const body = h('div', { class: 'fleet' });

  /** @param {Fleet} f */
  const draw = (f) => {
    const states = Object.entries(f.phones);
    fill(
      body,
      h(
        'div',
        { class: 'grid' },
        panel(
          'Phones',
          facts([
            ...(f.capacity === undefined
              ? []
              : [/** @type {[string, string]} */ (['Capacity', String(f.capacity)])]),
            ...states.map(([state, n]) => /** @type {[string, string]} */ ([sentence(state), String(n)])),
          ]),
        ),
        panel(
          'Warm pool',
          facts([
            ['Target', String(f.pool.target)],
            ['Ready', String(f.pool.ready)],
            ['Warming up', String(f.pool.booting ?? 0)],
          ]),
        ),
        panel(
          'Boot queue',
          facts([
            ['Queued', String(f.queue.queued)],
            ['Booting', String(f.queue.booting)],
            ['Boot slots', String(f.queue.boot_slots)],
          ]),
        ),
      ),
      h(
        'section',
        { class: 'panel' },
        h('h2', {}, 'Boot times'),
        table(
          ['Started by', 'Boots', 'Median', 'p95'],
          SOURCES.map(([key, label]) => {
            const t = f.boot_times[key];
            return [label, String(t?.count ?? 0), elapsed(t?.p50_ms), elapsed(t?.p95_ms)];
          }),
          'Boot times by how the phone started',
        ),
      ),
      h(
        'section',
        { class: 'panel' },
        h('h2', {}, 'Device hosts'),
        f.hosts === null
          ? h('p', { class: 'muted' }, 'This is a single server: its phones run in this process.')
          : f.hosts.length === 0
            ? empty('No device hosts', 'Start one with ', h('code', {}, 'phonelease host --store URL'), '.')
            : table(
                ['Host', 'Address', 'Phones', 'Sessions', 'Boot slots', 'Last heartbeat'],
                f.hosts.map((host) => [
                  h('code', {}, host.id),
                  host.url,
                  String(host.phones),
                  String(host.sessions ?? '–'),
                  String(host.boot_slots),
                  dateTime(host.last_heartbeat),
                ]),
                'Device hosts',
              ),
      ),
    );
  };

  try {
    draw(await api.get('/dashboard/api/fleet', signal));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      return h(
        'section',
        {},
        heading('Page not found'),
        h('p', { class: 'error', role: 'alert' }, err.message),
      );
    }
    throw err;
  }
  every(
    2000,
    async () => {
      try {
        const f = await api.get('/dashboard/api/fleet', signal);
        if (signal.aborted) return;
        errors.clear();
        draw(f);
      } catch (err) {
        if (!signal.aborted) errors.show(err);
      }
    },
    signal,
    { wait: true },
  );
  return h('section', {}, heading('Fleet'), errors.node, body);
}
