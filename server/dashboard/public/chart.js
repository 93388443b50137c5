// @ts-check
/**
 * The history chart: billable minutes per day for the last 30 days, as inline SVG made
 * with DOM calls. Colours and sizes come from classes in dashboard.css (the CSP allows no
 * inline style); each bar carries a <title>, so pointing at it (or a screen reader) says
 * the day and its minutes.
 */
import { h, svg } from './dom.js';
import { count, dayKey } from './format.js';

export const CHART_DAYS = 30;

/** Drawn at the width it is shown at (1 SVG unit = 1 CSS pixel), so text keeps its size. */
const MIN_WIDTH = 300;
const HEIGHT = 220;
const PAD = { left: 40, right: 24, top: 12, bottom: 28 };

/**
 * The first instant of the chart's window (local midnight, CHART_DAYS - 1 days ago).
 * @param {Date} today
 */
export function windowStart(today) {
  const d = new Date(today.getFullYear(), today.getMonth(), today.getDate());
  d.setDate(d.getDate() - (CHART_DAYS - 1));
  return d;
}

/**
 * Minutes per local day, oldest first, every day of the window present (zeros included).
 * Each session counts on the day it ended.
 * @param {Array<{ ended: number, billable_minutes: number }>} records
 * @param {Date} today
 * @returns {Array<{ day: Date, minutes: number }>}
 */
export function minutesPerDay(records, today) {
  const start = windowStart(today);
  /** @type {Map<string, { day: Date, minutes: number }>} */
  const days = new Map();
  for (let i = 0; i < CHART_DAYS; i++) {
    const day = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i);
    days.set(dayKey(day), { day, minutes: 0 });
  }
  for (const r of records) {
    const bucket = days.get(dayKey(new Date(r.ended * 1000)));
    if (bucket) bucket.minutes += r.billable_minutes;
  }
  return [...days.values()];
}

/** A round top for the y axis: 1, 2, 5, 10, 20, 50, ... at least `max`. @param {number} max */
function niceTop(max) {
  if (max <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * step).find((t) => t >= max) ?? 10 * step;
}

const SHORT_DAY = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/**
 * @param {Array<{ day: Date, minutes: number }>} days
 * @param {number} width the width it will be shown at, in CSS pixels
 */
export function billableChart(days, width) {
  const WIDTH = Math.max(MIN_WIDTH, Math.round(width));
  const total = days.reduce((sum, d) => sum + d.minutes, 0);
  const top = niceTop(Math.max(...days.map((d) => d.minutes)));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotW / days.length;
  const y = (/** @type {number} */ v) => PAD.top + plotH - (v / top) * plotH;

  const grid = [0, top / 2, top].map((v) =>
    svg(
      'g',
      { class: 'tick' },
      svg('line', {
        x1: PAD.left,
        x2: WIDTH - PAD.right,
        y1: y(v),
        y2: y(v),
        class: v === 0 ? 'axis' : 'gridline',
      }),
      svg('text', { x: PAD.left - 6, y: y(v) + 4, class: 'label end' }, String(Math.round(v * 10) / 10)),
    ),
  );
  const bars = days.map(({ day, minutes }, i) => {
    const x = PAD.left + i * slot + slot * 0.15;
    const barH = (minutes / top) * plotH;
    return svg(
      'rect',
      {
        class: minutes > 0 ? 'bar' : 'bar zero',
        x: x.toFixed(1),
        y: (PAD.top + plotH - barH).toFixed(1),
        width: (slot * 0.7).toFixed(1),
        height: Math.max(barH, 0).toFixed(1),
      },
      svg('title', {}, `${SHORT_DAY.format(day)}: ${count(minutes, 'billable minute')}`),
    );
  });
  // A date under every 7th day, counted back from today so the last bar is labelled.
  const labels = days
    .map(({ day }, i) => ({ day, i }))
    .filter(({ i }) => (days.length - 1 - i) % 7 === 0)
    .map(({ day, i }) =>
      svg(
        'text',
        { x: PAD.left + (i + 0.5) * slot, y: HEIGHT - 8, class: 'label middle' },
        SHORT_DAY.format(day),
      ),
    );
  const summary = `${count(total, 'billable minute')} in the last ${CHART_DAYS} days`;

  return h(
    'figure',
    { class: 'chart' },
    svg(
      'svg',
      {
        viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
        role: 'img',
        'aria-label': `Billable minutes per day: ${summary}`,
        class: 'bars',
      },
      grid,
      bars,
      labels,
      total === 0
        ? svg(
            'text',
            { x: PAD.left + plotW / 2, y: PAD.top + plotH / 2, class: 'label middle none' },
            'No billable minutes in the last 30 days',
          )
        : null,
    ),
    h('figcaption', { class: 'muted' }, `${summary}, by the day each session ended.`),
  );
}
