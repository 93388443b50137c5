/**
 * What errors say when a locator finds too much or nothing: the matches listed (strict
 * mode), or the views on screen closest to what the locator asked for.
 */
import type { Step } from './selector.js';
import { describeNode, type UiNode, type UiSnapshot } from './tree.js';

export class UiTimeoutError extends Error {
  override name = 'TimeoutError';
}

export class StrictModeViolationError extends Error {
  override name = 'StrictModeViolationError';
}

function shortId(node: UiNode): string {
  return node.resourceId.replace(/^[^:]+:id\//, '');
}

/** A locator that finds `node` alone on this screen, to suggest in strict-mode errors. */
function aka(node: UiNode, snap: UiSnapshot): string | null {
  const id = shortId(node);
  if (id && snap.nodes.filter((n) => n.resourceId === node.resourceId).length === 1)
    return `phone.getById('${id}')`;
  if (node.text && snap.nodes.filter((n) => n.text === node.text).length === 1)
    return `phone.getByText('${node.text}', { exact: true })`;
  if (node.contentDesc && snap.nodes.filter((n) => n.contentDesc === node.contentDesc).length === 1)
    return `phone.getByDesc('${node.contentDesc}')`;
  return null;
}

export function strictModeMessage(title: string, matches: UiNode[], snap: UiSnapshot): string {
  const lines = matches.slice(0, 10).map((n, i) => {
    const alias = aka(n, snap);
    return `    ${i + 1}) ${describeNode(n)}${alias ? ` aka ${alias}` : ''}`;
  });
  if (matches.length > 10) lines.push(`    ... and ${matches.length - 10} more`);
  return (
    `strict mode violation: ${title} resolved to ${matches.length} elements:\n${lines.join('\n')}\n` +
    `Narrow it down with .first(), .nth(i), .filter({ hasText }) or a more specific selector.`
  );
}

function queryStrings(steps: readonly Step[]): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string' && v) out.push(v.toLowerCase());
    else if (v instanceof RegExp) out.push(v.source.toLowerCase());
  };
  for (const s of steps) {
    if (s.kind === 'text') add(s.query.text);
    else if (s.kind === 'select') {
      const { text, textContains, res, desc, clazz } = s.selector;
      [text, textContains, res, desc, clazz].forEach(add);
    } else if (s.kind === 'xpath')
      for (const m of s.expression.matchAll(/'([^']*)'|"([^"]*)"/g)) add(m[1] ?? m[2]);
    else if (s.kind === 'filter') {
      add(s.hasText);
      // What the view must hold is worth suggesting too; what it must not hold is not.
      if (s.has) out.push(...queryStrings(s.has));
    } else if (s.kind === 'and' || s.kind === 'or') out.push(...queryStrings(s.steps));
  }
  return out;
}

function distance(a: string, b: string): number {
  if (a === b) return 0;
  if (b.includes(a) || a.includes(b)) return Math.abs(a.length - b.length) / Math.max(a.length, b.length) / 2;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]! / Math.max(a.length, b.length);
}

/** The views on screen most like what the steps ask for (at most `limit`). */
export function nearestCandidates(steps: readonly Step[], snap: UiSnapshot, limit = 5): UiNode[] {
  const labelled = snap.nodes.filter((n) => n.text || n.contentDesc || n.resourceId);
  const queries = queryStrings(steps);
  if (queries.length === 0) return labelled.filter((n) => n.clickable || n.text).slice(0, limit);
  const scored = labelled.map((n) => {
    const fields = [n.text, n.contentDesc, shortId(n), n.className.split('.').pop() ?? '']
      .filter((f) => f)
      .map((f) => f.toLowerCase());
    const score = Math.min(...queries.flatMap((q) => fields.map((f) => distance(q, f))));
    return { n, score };
  });
  return scored
    .sort((a, b) => a.score - b.score || a.n.order - b.n.order)
    .slice(0, limit)
    .map((s) => s.n);
}

export function describeCandidates(nodes: UiNode[]): string {
  if (nodes.length === 0) return 'The screen shows no labelled views.';
  return `Nearest candidates on screen:\n${nodes.map((n) => `  - ${describeNode(n)}`).join('\n')}`;
}

/** Which app is in front, from the tree (the package of most views). */
export function foregroundPackage(snap: UiSnapshot): string | null {
  const counts = new Map<string, number>();
  for (const n of snap.nodes)
    if (n.packageName) counts.set(n.packageName, (counts.get(n.packageName) ?? 0) + 1);
  let best: string | null = null;
  let max = 0;
  for (const [pkg, c] of counts) if (c > max) [best, max] = [pkg, c];
  return best;
}
