/**
 * The README and docs/ cannot rot: their TypeScript blocks compile against the package's
 * real types, and their relative links lead somewhere. The checker itself is shown to fail
 * on a planted broken block, marker and link in a temp copy of the docs.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkLinks,
  checkTsBlocks,
  extractTsBlocks,
  formatProblems,
  headingSlug,
  markdownFiles,
  type DocProblem,
  type MarkdownFile,
} from '../support/docs-check.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function blocksOf(files: readonly MarkdownFile[]) {
  const extracted = files.map(extractTsBlocks);
  return {
    blocks: extracted.flatMap((e) => e.blocks),
    problems: extracted.flatMap((e) => e.problems),
  };
}

function check(files: readonly MarkdownFile[], linksRoot: string): DocProblem[] {
  const { blocks, problems } = blocksOf(files);
  return [...problems, ...checkTsBlocks(blocks, ROOT), ...checkLinks(files, linksRoot)];
}

describe('docs', () => {
  const files = markdownFiles(ROOT);

  it('finds the README, the docs pages and their TypeScript blocks', () => {
    expect(files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['README.md', 'docs/playwright.md', 'docs/webdriverio.md', 'docs/client.md']),
    );
    const { blocks } = blocksOf(files);
    // The README's first Playwright test, its WebdriverIO config and the client lease at least.
    expect(blocks.filter((b) => b.file === 'README.md').length).toBeGreaterThanOrEqual(3);
  });

  it('every TypeScript block compiles against the package types', () => {
    const { blocks, problems } = blocksOf(files);
    const all = [...problems, ...checkTsBlocks(blocks, ROOT)];
    expect(all, formatProblems(all)).toEqual([]);
  }, 120_000);

  it('every relative link points at an existing file and heading', () => {
    const problems = checkLinks(files, ROOT);
    expect(problems, formatProblems(problems)).toEqual([]);
  });

  it('makes anchors the way GitHub does', () => {
    expect(headingSlug('Several machines: API nodes and device hosts on PostgreSQL')).toBe(
      'several-machines-api-nodes-and-device-hosts-on-postgresql',
    );
    expect(headingSlug('Running over real emulators (Linux with KVM)')).toBe(
      'running-over-real-emulators-linux-with-kvm',
    );
    expect(headingSlug('`phonelease server`')).toBe('phonelease-server');
  });

  describe('on a copy with planted mistakes', () => {
    const copy = mkdtempSync(join(tmpdir(), 'phonelease-docs-'));
    afterAll(() => rmSync(copy, { recursive: true, force: true }));

    it('fails with the file and line of a broken block, a bad marker and a dead link', () => {
      cpSync(join(ROOT, 'docs'), join(copy, 'docs'), { recursive: true });
      const planted = [
        '# Planted',
        '',
        '```ts',
        "import { leasePhone } from 'phonelease';",
        '',
        'await using phone = await leasePhone();',
        'await phone.dance(); // no such method',
        '```',
        '',
        '<!-- not-compiled: -->',
        '',
        '```ts',
        'const partial = phone;',
        '```',
        '',
        '<!-- not-compiled: shows only the shape -->',
        '',
        '```ts',
        'const fine = phone.id; // not compiled, so not reported',
        '```',
        '',
        '[gone](missing.md) and [no heading](playwright.md#no-such-heading).',
        '',
        '<!-- not-compiled: a marker left behind -->',
        '',
        'A paragraph, not a block.',
        '',
      ];
      writeFileSync(join(copy, 'docs', 'planted.md'), planted.join('\n'));
      const lineOf = (needle: string) => planted.findIndex((l) => l.includes(needle)) + 1;

      // Only the planted page: the copied ones are checked above, where they live.
      const problems = check(
        markdownFiles(copy).filter((f) => f.path === 'docs/planted.md'),
        copy,
      );
      const report = formatProblems(problems);
      expect(report).toContain(
        `docs/planted.md:${lineOf('phone.dance')}: TS2339: Property 'dance' does not exist on type 'Lease'`,
      );
      expect(report).toContain(
        `docs/planted.md:${lineOf('not-compiled: -->')}: a not-compiled marker needs a reason`,
      );
      const links = lineOf('[gone]');
      expect(report).toContain(
        `docs/planted.md:${links}: link to missing.md: docs/missing.md does not exist`,
      );
      expect(report).toContain(
        `docs/planted.md:${links}: link to playwright.md#no-such-heading: docs/playwright.md has no heading`,
      );
      expect(report).toContain(
        `docs/planted.md:${lineOf('left behind')}: a not-compiled marker must come right before a \`\`\`ts block`,
      );
      // Exactly the planted mistakes: the block marked with a reason is left alone.
      expect(problems, report).toHaveLength(5);
    }, 120_000);
  });
});
