// @ts-check
/** Numbers from the API in words a person reads at a glance. */

/**
 * "45 s", "3 min 05 s", "2 h 07 min", "3 d 4 h".
 * @param {number} seconds
 */
export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/**
 * US cents as dollars: 1234 → "$12.34".
 * @param {number} cents
 */
export function money(cents) {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * A Unix time (whole seconds) in the reader's own time zone.
 * @param {number} unixSeconds
 */
export function dateTime(unixSeconds) {
  return DATE_TIME.format(new Date(unixSeconds * 1000));
}

/**
 * The local calendar day of a Unix time, as YYYY-MM-DD (the history chart's buckets).
 * @param {Date} date
 */
export function dayKey(date) {
  const m = String(date.getMonth() + 1).padStart(2, '0');
  const d = String(date.getDate()).padStart(2, '0');
  return `${date.getFullYear()}-${m}-${d}`;
}

/**
 * "1 session", "3 sessions".
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 */
export function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}
