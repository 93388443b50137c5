// @ts-check
/**
 * History: finished sessions, newest first, paged through the whole history with
 * GET /history/page ("Load more" follows next_cursor), and the chart of billable minutes
 * per day for the last 30 days, read from as many pages as that window takes.
 */
import { billableChart, minutesPerDay, windowStart } from './chart.js';
import { h } from './dom.js';
import { count, dateTime, money } from './format.js';
import { empty, errorBox, heading, panel, table } from './ui.js';

const PAGE_SIZE = 50;
/** The chart reads the biggest pages the API gives, to need few of them. */
const CHART_PAGE_SIZE = 500;
/**
 * History is ordered by creation; a session counts on the day it ended. Reading on past the
 * window by this much also counts sessions that started the day before it and ended inside.
 */
const CHART_OVERLAP_S = 24 * 3600;

/**
 * @typedef {{ sid: string, device: string, created: number, ready: number | null, ended: number,
 *   end_reason: string, billing_mode: string, cost_cents: number, usage_minutes: number,
 *   billable_minutes: number }} HistoryRecord
 * @typedef {{ items: HistoryRecord[], next_cursor: string | null }} HistoryPage
 */

/** End reasons in words (the API's codes are listed in docs/api.md). */
const END_REASONS = /** @type {Record<string, string>} */ ({
  released: 'Ended by its owner',
  expired: 'Deadline passed',
  failed: 'Failed to start',
  credit_exhausted: 'Credit ran out',
  lost: 'Phone lost',
});

/** @param {string} cursor @param {number} limit */
const pagePath = (cursor, limit) =>
  `/history/page?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;

/** @type {import('./app.js').Page} */
export async function historyPage({ api, signal }) {
  const errors = errorBox();
  const chartSlot = h(
    'div',
    { class: 'chart-slot' },
    h('p', { class: 'muted' }, 'Adding up the last 30 days…'),
  );
  const rows = h('div', { class: 'history-rows' });
  const status = h('p', { class: 'muted', role: 'status' });
  const more = h('button', { type: 'button', class: 'button plain', hidden: true }, 'Load more');

  /** @type {HistoryRecord[]} */
  const shown = [];
  /** @type {string | null} */
  let next = null;

  const drawRows = () => {
    if (shown.length === 0) {
      rows.replaceChildren(
        empty(
          'No finished sessions yet',
          'A session shows here once it has ended and its phone was handed back.',
        ),
      );
      return;
    }
    rows.replaceChildren(
      table(
        ['Ended', 'Phone', 'End reason', 'Usage', 'Billable', 'Cost'],
        shown.map((r) => [
          h('time', { datetime: new Date(r.ended * 1000).toISOString() }, dateTime(r.ended)),
          h('span', {}, r.device, h('span', { class: 'sid' }, r.sid)),
          END_REASONS[r.end_reason] ?? r.end_reason,
          `${r.usage_minutes} min`,
          `${r.billable_minutes} min`,
          money(r.cost_cents),
        ]),
        'Finished sessions, newest first',
      ),
    );
    status.textContent = next
      ? `Showing the newest ${count(shown.length, 'session')}.`
      : `${count(shown.length, 'finished session')}: the whole history.`;
  };

  const loadPage = async () => {
    /** @type {HistoryPage} */
    const page = await api.get(pagePath(next ?? '', PAGE_SIZE), signal);
    shown.push(...page.items);
    next = page.next_cursor;
    more.hidden = next === null;
    drawRows();
  };

  more.addEventListener('click', () => {
    more.disabled = true;
    errors.clear();
    loadPage()
      .catch((err) => errors.show(err))
      .finally(() => {
        more.disabled = false;
      });
  });

  const drawChart = async () => {
    /** @type {HistoryPage} */
    let page = await api.get(pagePath('', CHART_PAGE_SIZE), signal);
    // The window ends today, or on the day the latest session ended if the server's clock
    // is ahead of this browser's (a skewed laptop, or just past midnight on one side only):
    // minutes the server has billed are never left off the chart.
    const today = new Date(Math.max(Date.now(), ...page.items.map((r) => r.ended * 1000)));
    const from = windowStart(today).getTime() / 1000 - CHART_OVERLAP_S;
    /** @type {HistoryRecord[]} */
    const records = [];
    for (;;) {
      records.push(...page.items);
      const last = page.items[page.items.length - 1];
      if (!page.next_cursor || !last || last.created < from) break;
      page = await api.get(pagePath(page.next_cursor, CHART_PAGE_SIZE), signal);
    }
    if (signal.aborted) return;
    const days = minutesPerDay(records, today);
    // Redrawn when its width changes (a turned phone, a resized window), to keep text sharp.
    let drawnAt = -1;
    const draw = () => {
      const width = chartSlot.clientWidth;
      if (Math.abs(width - drawnAt) < 8) return;
      drawnAt = width;
      chartSlot.replaceChildren(billableChart(days, width));
    };
    const resized = new ResizeObserver(draw);
    resized.observe(chartSlot);
    signal.addEventListener('abort', () => resized.disconnect(), { once: true });
    draw();
  };

  await loadPage();
  drawChart().catch((err) => {
    if (!signal.aborted)
      chartSlot.replaceChildren(h('p', { class: 'error', role: 'alert' }, String(err.message ?? err)));
  });

  return h(
    'section',
    {},
    heading('History'),
    errors.node,
    panel('Billable minutes per day', chartSlot),
    h(
      'section',
      { class: 'panel' },
      h('h2', {}, 'Finished sessions'),
      rows,
      h('div', { class: 'actions' }, more, status),
    ),
  );
}
