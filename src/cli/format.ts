/**
 * Human output for the command line: aligned tables and short relative times. Scripts use
 * --json instead; nothing here is meant to be parsed.
 */

/** Rows under a header, each column as wide as its widest cell, two spaces apart. */
export function table(header: string[], rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** `label  value` lines with the labels aligned. */
export function fields(pairs: Array<[string, string]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n') + '\n';
}

/** Seconds as `45s`, `12m`, `3h05m`, `2d4h`. */
export function span(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

/** A Unix time relative to now: `in 12m`, `3h05m ago`. */
export function relative(unixSeconds: number, nowMs = Date.now()): string {
  const delta = unixSeconds - nowMs / 1000;
  return delta >= 0 ? `in ${span(delta)}` : `${span(-delta)} ago`;
}

/** A Unix time as `2026-09-14 08:30 UTC`. */
export function when(unixSeconds: number): string {
  return `${new Date(unixSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** US cents as `$12.34`. */
export const dollars = (cents: number): string =>
  `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`;
