/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests: every
 * sample must belong to a family declared by `# TYPE` before it, label sets must be well
 * formed, values must be numbers, and a histogram's buckets must be cumulative and end at
 * `+Inf` with its `_count`. It throws on the first line that breaks the format.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: number): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`line ${line}: bad value "${text}"`);
  return Number(text);
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`line ${line}: label without "="`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`line ${line}: bad label name "${name}"`);
    if (name in labels) throw new Error(`line ${line}: label "${name}" repeated`);
    if (text[eq + 1] !== '"') throw new Error(`line ${line}: label value not quoted`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      const c = text[j];
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`);
      if (c === '"') break;
      if (c === '\\') {
        const e = text[j + 1];
        if (e === 'n') value += '\n';
        else if (e === '\\' || e === '"') value += e;
        else throw new Error(`line ${line}: bad escape "\\${e ?? ''}"`);
        j += 2;
      } else {
        value += c;
        j++;
      }
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (i !== text.length) throw new Error(`line ${line}: expected "," between labels`);
  }
  return labels;
}

/** The family a sample name belongs to (a histogram's _bucket, _sum and _count are its own). */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  const base = m ? families.get(m[1]!) : undefined;
  if (!base) return undefined;
  if (base.type === 'histogram') return base;
  if (base.type === 'summary' && m![2] !== 'bucket') return base;
  return undefined;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  text
    .slice(0, -1)
    .split('\n')
    .forEach((raw, index) => {
      const line = index + 1;
      if (raw === '') return;
      if (raw.startsWith('#')) {
        const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
        if (!m) return; // a plain comment
        const [, kind, name, rest] = m as unknown as [string, string, string, string];
        if (!NAME.test(name)) throw new Error(`line ${line}: bad metric name "${name}"`);
        const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
        if (kind === 'TYPE') {
          if (!TYPES.has(rest)) throw new Error(`line ${line}: unknown type "${rest}"`);
          if (family.samples.length > 0) throw new Error(`line ${line}: TYPE after samples of ${name}`);
          family.type = rest as Family['type'];
        } else family.help = rest;
        families.set(name, family);
        return;
      }
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(raw);
      if (!m) throw new Error(`line ${line}: not a sample: ${raw}`);
      const [, name, labelText, value] = m as unknown as [string, string, string | undefined, string];
      const family = familyOf(name, families);
      if (!family) throw new Error(`line ${line}: sample ${name} has no # TYPE before it`);
      family.samples.push({
        name,
        labels: parseLabels(labelText ?? '', line),
        value: parseValue(value, line),
      });
    });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  const key = (labels: Record<string, string>) =>
    JSON.stringify(
      Object.entries(labels)
        .filter(([k]) => k !== 'le')
        .sort(),
    );
  for (const s of family.samples) {
    const entry = series.get(key(s.labels)) ?? { buckets: [] };
    series.set(key(s.labels), entry);
    if (s.name.endsWith('_bucket')) {
      if (s.labels.le === undefined) throw new Error(`${family.name}: bucket without le`);
      entry.buckets.push([parseValue(s.labels.le, 0), s.value]);
    } else if (s.name.endsWith('_count')) entry.count = s.value;
  }
  for (const [labels, { buckets, count }] of series) {
    for (let i = 1; i < buckets.length; i++) {
      if (buckets[i]![0] <= buckets[i - 1]![0] || buckets[i]![1] < buckets[i - 1]![1])
        throw new Error(`${family.name}${labels}: buckets not cumulative in increasing le`);
    }
    const last = buckets.at(-1);
    if (!last || last[0] !== Infinity || last[1] !== count)
      throw new Error(`${family.name}${labels}: the +Inf bucket must equal _count`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}
