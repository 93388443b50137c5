/**
 * No module of the package, its benchmarks, examples or test support imports itself through
 * other modules (type-only imports included), and no two folders lean on each other: a cycle
 * there means a type or a module lives in the wrong place.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const AREAS = ['src', 'fixtures', 'server', 'bench', 'examples', 'test/support'];

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Relative imports and re-exports of a file, as paths from the repository root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)) {
    out.push(normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts'))));
  }
  return out;
}

/** Strongly connected components with more than one file (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(relative(root, join(root, w)));
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import cycles', () => {
  const files = new Map(AREAS.flatMap(sources).map((f) => [f, importsOf(f)] as const));

  it('no module imports itself through others', () => {
    expect(files.size).toBeGreaterThan(250);
    expect(cycles(files)).toEqual([]);
  });

  // A folder may use its parent's shared modules (src/errors.ts) and its own subfolders; two
  // folders that are not nested, such as src/lease and src/crash, must not lean on each other.
  it('no two folders import each other', () => {
    const nested = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
    const folders = new Map<string, string[]>();
    for (const [file, imports] of files) {
      const from = dirname(file);
      const edges = folders.get(from) ?? [];
      edges.push(...imports.map(dirname).filter((to) => !nested(from, to)));
      folders.set(from, edges);
    }
    expect(cycles(folders)).toEqual([]);
  });
});
