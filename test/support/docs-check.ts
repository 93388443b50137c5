/**
 * Keeps the README and docs/ honest: every TypeScript code block compiles against the
 * package's real types, and every relative link points at a file (and heading) that exists.
 *
 * A block is type-checked the way the examples are (`npm run typecheck`): with the root
 * tsconfig.json's compiler options, and with the package's own import names (`phonelease`,
 * `phonelease/playwright`, ...) resolved through package.json `exports` to the declarations
 * in dist/, the types a user of the package compiles against (`npm test` builds them first;
 * they are also much cheaper to load than the sources). Blocks are served to the compiler
 * from memory as files at the package root (so `@playwright/test` and the rest resolve from
 * its node_modules); nothing is written to disk.
 *
 * A block that is deliberately partial is preceded by `<!-- not-compiled: why -->` (blank
 * lines between are fine: prettier puts one there); a marker without a reason, or with no
 * TypeScript block after it, is itself a problem.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** A markdown file to check: its path relative to the docs root (for messages) and its text. */
export interface MarkdownFile {
  path: string;
  text: string;
}

export interface CodeBlock {
  /** The markdown file's path, as given. */
  file: string;
  /** 1-based line of the block's first code line in the markdown file. */
  line: number;
  code: string;
  /** Set when a `not-compiled` marker precedes the block. */
  notCompiled?: string;
}

/** A problem found in a markdown file, reported as `file:line: message`. */
export interface DocProblem {
  file: string;
  line: number;
  message: string;
}

export function formatProblems(problems: readonly DocProblem[]): string {
  return problems.map((p) => `${p.file}:${p.line}: ${p.message}`).join('\n');
}

/** README.md and CHANGELOG.md at the root, and every markdown file under docs/. */
export function markdownFiles(root: string): MarkdownFile[] {
  const paths = ['README.md', 'CHANGELOG.md'].filter((p) => existsSync(join(root, p)));
  const walk = (dir: string): void => {
    if (!existsSync(join(root, dir))) return;
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) paths.push(path);
    }
  };
  walk('docs');
  return paths.map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/;
const MARKER = /^\s*<!--\s*not-compiled:?(.*?)-->\s*$/;
const TS_LANGUAGES = new Set(['ts', 'typescript']);

interface Fence {
  /** 0-based index of the opening fence line. */
  start: number;
  /** 0-based index of the closing fence line (the last line when unclosed). */
  end: number;
  indent: number;
  language: string;
}

function fences(lines: readonly string[]): Fence[] {
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent = '', marks = '', language = ''] = open;
    let end = i + 1;
    // A closing fence is the same character, at least as long, and nothing after it.
    while (end < lines.length) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[end]!);
      if (close && close[1]![0] === marks[0] && close[1]!.length >= marks.length) break;
      end++;
    }
    found.push({ start: i, end: Math.min(end, lines.length - 1), indent: indent.length, language });
    i = end;
  }
  return found;
}

/**
 * The TypeScript blocks of one file, with the `not-compiled` markers that precede them.
 * Also returns problems with markers: one without a reason, one not followed by a TS block.
 */
export function extractTsBlocks(file: MarkdownFile): { blocks: CodeBlock[]; problems: DocProblem[] } {
  const lines = file.text.split('\n');
  const blocks: CodeBlock[] = [];
  const problems: DocProblem[] = [];
  const markersUsed = new Set<number>();
  for (const fence of fences(lines)) {
    if (!TS_LANGUAGES.has(fence.language)) continue;
    let before = fence.start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const marker = before >= 0 ? MARKER.exec(lines[before]!) : null;
    const code = lines
      .slice(fence.start + 1, fence.end)
      .map((l) => l.slice(Math.min(fence.indent, l.length - l.trimStart().length)))
      .join('\n');
    const block: CodeBlock = { file: file.path, line: fence.start + 2, code };
    if (marker) {
      markersUsed.add(before);
      const reason = marker[1]!.trim();
      if (reason === '')
        problems.push({
          file: file.path,
          line: before + 1,
          message:
            'a not-compiled marker needs a reason: <!-- not-compiled: why this block cannot compile -->',
        });
      block.notCompiled = reason;
    }
    blocks.push(block);
  }
  lines.forEach((line, i) => {
    if (MARKER.test(line) && !markersUsed.has(i))
      problems.push({
        file: file.path,
        line: i + 1,
        message: 'a not-compiled marker must come right before a ```ts block; remove it or move it',
      });
  });
  return { blocks, problems };
}

/** Which compiler environment a block needs: WebdriverIO specs and configs use its globals. */
function environmentOf(block: CodeBlock): 'node' | 'wdio' {
  return block.file.endsWith('webdriverio.md') || /from\s+['"]phonelease\/wdio['"]/.test(block.code)
    ? 'wdio'
    : 'node';
}

/** `phonelease/x` -> its declarations in dist/, from package.json `exports`. */
function selfImportPaths(packageRoot: string): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    if (!types) continue;
    const declarations = join(packageRoot, types);
    if (!existsSync(declarations))
      throw new Error(
        `${relative(packageRoot, declarations)} is missing: run "npm run build" first (the docs' code blocks compile against the package's built types)`,
      );
    paths[subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`] = [declarations];
  }
  return paths;
}

function compilerOptions(tsconfig: string, extra: ts.CompilerOptions): ts.CompilerOptions {
  const read = ts.readConfigFile(tsconfig, (p) => ts.sys.readFile(p));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfig));
  return { ...parsed.options, ...extra };
}

/**
 * Type-checks every TypeScript block not marked `not-compiled`, returning one problem per
 * compiler error at the block's line in its markdown file.
 */
export function checkTsBlocks(blocks: readonly CodeBlock[], packageRoot: string): DocProblem[] {
  const root = resolve(packageRoot);
  const paths = selfImportPaths(root);
  const envs = {
    node: compilerOptions(join(root, 'tsconfig.json'), { noEmit: true, paths }),
    // The WebdriverIO example's types: its globals ($, driver, expect) and mocha's.
    wdio: compilerOptions(join(root, 'examples', 'wdio', 'tsconfig.json'), { noEmit: true, paths }),
  };
  // Shared across both programs: the package and its dependencies are parsed once.
  const parsed = new Map<string, ts.SourceFile | undefined>();
  const problems: DocProblem[] = [];

  for (const env of ['node', 'wdio'] as const) {
    const virtual = new Map<string, CodeBlock>();
    blocks.forEach((block, i) => {
      if (block.notCompiled !== undefined || environmentOf(block) !== env) return;
      // At the package root, so that bare imports resolve from its node_modules; `.ts` in a
      // `"type": "module"` package, so blocks are ES modules (top-level await works).
      const name = `${block.file.replace(/[^A-Za-z0-9]+/g, '-')}-L${block.line}-${i}.ts`;
      virtual.set(join(root, '.docs-blocks', name), block);
    });
    if (virtual.size === 0) continue;
    const options = envs[env];
    const host = ts.createCompilerHost(options, true);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
      const block = virtual.get(fileName);
      if (block) return ts.createSourceFile(fileName, block.code, languageVersion, true);
      const key = `${fileName}\0${JSON.stringify(languageVersion)}`;
      if (!parsed.has(key)) parsed.set(key, getSourceFile(fileName, languageVersion, onError, shouldCreate));
      return parsed.get(key);
    };
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (fileName) => virtual.has(fileName) || fileExists(fileName);
    const readFile = host.readFile.bind(host);
    host.readFile = (fileName) => virtual.get(fileName)?.code ?? readFile(fileName);

    const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
    for (const diagnostic of program.getOptionsDiagnostics())
      problems.push({ file: 'tsconfig.json', line: 1, message: messageOf(diagnostic) });
    for (const [fileName, block] of virtual) {
      const source = program.getSourceFile(fileName)!;
      const diagnostics = [
        ...program.getSyntacticDiagnostics(source),
        ...program.getSemanticDiagnostics(source),
      ];
      for (const diagnostic of diagnostics) {
        const { line } = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
        problems.push({ file: block.file, line: block.line + line, message: messageOf(diagnostic) });
      }
    }
  }
  return problems.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

function messageOf(diagnostic: ts.Diagnostic): string {
  return `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a markdown file's headings make, numbered on repeats as GitHub does. */
function anchorsOf(text: string): Set<string> {
  const lines = text.split('\n');
  const inCode = new Set<number>();
  for (const fence of fences(lines)) for (let i = fence.start; i <= fence.end; i++) inCode.add(i);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  lines.forEach((line, i) => {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading || inCode.has(i)) return;
    const slug = headingSlug(heading[1]!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  });
  return anchors;
}

/** Markdown links and images outside code: `[text](target)`, `![alt](target)`, `[ref]: target`. */
function linksOf(text: string): { target: string; line: number }[] {
  const lines = text.split('\n');
  const inCode = new Set<number>();
  for (const fence of fences(lines)) for (let i = fence.start; i <= fence.end; i++) inCode.add(i);
  const links: { target: string; line: number }[] = [];
  lines.forEach((raw, i) => {
    if (inCode.has(i)) return;
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ target: m[1]!, line: i + 1 });
    const reference = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(line);
    if (reference) links.push({ target: reference[1]!, line: i + 1 });
  });
  return links;
}

/**
 * Every relative link of the given files, checked against the files under `root`: the file
 * (or folder) must exist, and an anchor into a markdown file must name one of its headings.
 */
export function checkLinks(files: readonly MarkdownFile[], root: string): DocProblem[] {
  const problems: DocProblem[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let found = anchorCache.get(path);
    if (!found) anchorCache.set(path, (found = anchorsOf(readFileSync(path, 'utf8'))));
    return found;
  };
  for (const file of files) {
    for (const { target, line } of linksOf(file.text)) {
      // Absolute URLs (https:, mailto:) are left to the reader's browser.
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
      const [pathPart = '', anchor] = target.split('#', 2);
      const path =
        pathPart === '' ? join(root, file.path) : resolve(root, dirname(file.path), decodeURI(pathPart));
      const shown = pathPart === '' ? file.path : relative(root, path);
      if (!existsSync(path)) {
        problems.push({ file: file.path, line, message: `link to ${target}: ${shown} does not exist` });
        continue;
      }
      if (anchor && statSync(path).isFile() && path.endsWith('.md') && !anchors(path).has(anchor))
        problems.push({
          file: file.path,
          line,
          message: `link to ${target}: ${shown} has no heading #${anchor}`,
        });
    }
  }
  return problems;
}
