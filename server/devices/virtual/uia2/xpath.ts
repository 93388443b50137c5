/**
 * XPath over the page-source element tree: location paths with every axis a test would
 * use, name and `*` tests, `text()` and `node()`, predicates (positional, boolean,
 * comparisons), unions, parenthesised filter expressions like `(//x)[2]`, and the XPath 1.0
 * core function library. Elements carry their `text` attribute as a text child, so both
 * `//*[@text='Log in']` and `//*[text()='Log in']` work.
 *
 * The UiAutomator2 server evaluates XPath 2.0 (AccessibilityNodeInfoDumper.findNodes uses
 * the Eclipse PsychoPath "xpath2" engine it bundles) unless the `enforceXPath1` setting is
 * true, when it uses javax.xml.xpath (XPath 1.0). So by default the XPath 2.0 functions
 * tests use are added: ends-with(), matches(), replace(), tokenize(), lower-case(),
 * upper-case(), string-join(), abs() and `if (...) then ... else ...`; with
 * `enforceXPath1` they are unknown functions, as in XPath 1.0. Regexes follow PsychoPath,
 * which hands them to Android's java.util.regex.Pattern (see xpathRegex below).
 * Comparisons and conversions keep XPath 1.0's rules.
 */
import type { SourceElement } from './source.js';
import {
  JavaRegexSyntaxError,
  JavaRegexUnsupportedError,
  translateJavaRegex,
  type CompiledJavaRegex,
} from './java-regex.js';

/** An expression the server refuses to compile (an invalid selector). */
export class XPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XPathError';
  }
}

/**
 * An error while evaluating XPath 2.0 (a PsychoPath DynamicError, such as an invalid regex
 * in matches()). The server reports these as an unknown error, not an invalid selector,
 * with this advice appended (findNodesUsingXpath2).
 */
export class XPathDynamicError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(
      `${message}. Try changing the 'enforceXPath1' driver setting to 'true' in order to workaround the problem.`,
    );
    this.name = 'XPathDynamicError';
  }
}

export interface XPathOptions {
  /** The server's `enforceXPath1` setting: XPath 1.0 only (default false: XPath 2.0). */
  enforceXPath1?: boolean;
}

/** Functions XPath 2.0 adds that are modelled; unknown functions under `enforceXPath1`. */
const XPATH2_FUNCTIONS = new Set([
  'ends-with',
  'matches',
  'replace',
  'tokenize',
  'lower-case',
  'upper-case',
  'string-join',
  'abs',
]);

interface AttrNode {
  kind: 'attr';
  name: string;
  value: string;
  owner: SourceElement;
}

interface TextNode {
  kind: 'text';
  value: string;
  owner: SourceElement;
}

export type XNode = SourceElement | AttrNode | TextNode;
type Atom = string | number | boolean;

/** An XPath 2.0 sequence of atomic values, such as tokenize() returns. */
export class AtomSequence {
  constructor(readonly items: Atom[]) {}
}

type Value = XNode[] | Atom | AtomSequence;

const isElement = (n: XNode): n is SourceElement => !('kind' in n);

// ---- tokenizer ----

type TokType = 'num' | 'str' | 'name' | 'axis' | 'fn' | 'nodetype' | 'op' | 'punct';
interface Token {
  type: TokType;
  value: string;
}

const NODE_TYPES = new Set(['node', 'text', 'comment', 'processing-instruction']);
const NAME_START = /[A-Za-z_\u00c0-\uffff]/;
const NAME_CHAR = /[A-Za-z0-9_.\-\u00b7\u00c0-\uffff]/;

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  // Per the XPath spec, `*` and operator names are operators unless they start a step.
  const operatorPosition = () => {
    const prev = out[out.length - 1];
    if (!prev) return false;
    if (prev.type === 'op') return false;
    if (prev.type === 'punct' && ['@', '::', '(', '[', ','].includes(prev.value)) return false;
    if (prev.type === 'axis') return false;
    return true;
  };
  while (i < src.length) {
    const ch = src[i] ?? '';
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (ch === '"' || ch === "'") {
      const end = src.indexOf(ch, i + 1);
      if (end < 0) throw new XPathError(`unterminated string literal at ${i}`);
      out.push({ type: 'str', value: src.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(src[i + 1] ?? ''))) {
      const m = /^[0-9]*\.?[0-9]*/.exec(src.slice(i));
      const text = m?.[0] ?? ch;
      out.push({ type: 'num', value: text });
      i += text.length;
      continue;
    }
    if (two === '//' || two === '!=' || two === '<=' || two === '>=') {
      out.push({ type: 'op', value: two });
      i += 2;
      continue;
    }
    if (two === '::') {
      out.push({ type: 'punct', value: '::' });
      i += 2;
      continue;
    }
    if (two === '..') {
      out.push({ type: 'punct', value: '..' });
      i += 2;
      continue;
    }
    if ('/|+=<>'.includes(ch) || (ch === '-' && operatorPosition())) {
      out.push({ type: 'op', value: ch });
      i++;
      continue;
    }
    if (ch === '-') {
      out.push({ type: 'op', value: 'neg' });
      i++;
      continue;
    }
    if (ch === '*') {
      out.push(operatorPosition() ? { type: 'op', value: '*' } : { type: 'name', value: '*' });
      i++;
      continue;
    }
    if ('()[]@,.$'.includes(ch)) {
      out.push({ type: 'punct', value: ch });
      i++;
      continue;
    }
    if (NAME_START.test(ch)) {
      let j = i + 1;
      while (j < src.length && NAME_CHAR.test(src[j] ?? '')) j++;
      // A prefixed name (ns:local) or prefix:* is one token; "::" is an axis separator.
      if (src[j] === ':' && src[j + 1] !== ':') {
        j++;
        if (src[j] === '*') j++;
        else while (j < src.length && NAME_CHAR.test(src[j] ?? '')) j++;
      }
      let name = src.slice(i, j);
      i = j;
      let k = i;
      while (k < src.length && /\s/.test(src[k] ?? '')) k++;
      const next = src[k];
      if (operatorPosition() && ['and', 'or', 'div', 'mod'].includes(name)) {
        out.push({ type: 'op', value: name });
        continue;
      }
      if (src.slice(k, k + 2) === '::') out.push({ type: 'axis', value: name });
      else if (next === '(') out.push({ type: NODE_TYPES.has(name) ? 'nodetype' : 'fn', value: name });
      else {
        if (name.endsWith('.')) {
          // "foo." is not a name; give back the dot.
          name = name.slice(0, -1);
          i--;
        }
        out.push({ type: 'name', value: name });
      }
      continue;
    }
    throw new XPathError(`unexpected character '${ch}' at ${i}`);
  }
  return out;
}

// ---- parser ----

type Axis =
  | 'child'
  | 'descendant'
  | 'descendant-or-self'
  | 'self'
  | 'parent'
  | 'ancestor'
  | 'ancestor-or-self'
  | 'following-sibling'
  | 'preceding-sibling'
  | 'following'
  | 'preceding'
  | 'attribute';

const AXES = new Set<string>([
  'child',
  'descendant',
  'descendant-or-self',
  'self',
  'parent',
  'ancestor',
  'ancestor-or-self',
  'following-sibling',
  'preceding-sibling',
  'following',
  'preceding',
  'attribute',
]);

type NodeTest = { kind: 'name'; name: string } | { kind: 'node' } | { kind: 'text' };
interface Step {
  axis: Axis;
  test: NodeTest;
  preds: Expr[];
}

type Expr =
  | { k: 'or' | 'and'; a: Expr; b: Expr }
  | { k: 'cmp'; op: string; a: Expr; b: Expr }
  | { k: 'arith'; op: string; a: Expr; b: Expr }
  | { k: 'neg'; a: Expr }
  | { k: 'union'; a: Expr; b: Expr }
  | { k: 'path'; absolute: boolean; start: Expr | null; steps: Step[] }
  | { k: 'filter'; primary: Expr; preds: Expr[] }
  | { k: 'str'; v: string }
  | { k: 'num'; v: number }
  | { k: 'fn'; name: string; args: Expr[] }
  | { k: 'if'; test: Expr; then: Expr; else: Expr };

const DESCENDANT_OR_SELF: Step = { axis: 'descendant-or-self', test: { kind: 'node' }, preds: [] };

class Parser {
  private i = 0;
  constructor(
    private readonly toks: Token[],
    private readonly xpath1: boolean,
  ) {}

  private peek(offset = 0): Token | undefined {
    return this.toks[this.i + offset];
  }
  private is(type: TokType, value?: string): boolean {
    const t = this.peek();
    return !!t && t.type === type && (value === undefined || t.value === value);
  }
  private take(): Token {
    const t = this.toks[this.i++];
    if (!t) throw new XPathError('unexpected end of expression');
    return t;
  }
  private expect(type: TokType, value: string): void {
    const t = this.take();
    if (t.type !== type || t.value !== value)
      throw new XPathError(`expected '${value}' but found '${t.value}'`);
  }

  parse(): Expr {
    const e = this.or();
    const rest = this.peek();
    if (rest) throw new XPathError(`unexpected '${rest.value}'`);
    return e;
  }

  private binary(next: () => Expr, ops: string[], k: 'or' | 'and' | 'cmp' | 'arith'): Expr {
    let a = next();
    while (this.peek()?.type === 'op' && ops.includes(this.peek()?.value ?? '')) {
      const op = this.take().value;
      const b = next();
      a = k === 'or' || k === 'and' ? { k, a, b } : { k, op, a, b };
    }
    return a;
  }
  private or(): Expr {
    return this.binary(() => this.and(), ['or'], 'or');
  }
  private and(): Expr {
    return this.binary(() => this.equality(), ['and'], 'and');
  }
  private equality(): Expr {
    return this.binary(() => this.relational(), ['=', '!='], 'cmp');
  }
  private relational(): Expr {
    return this.binary(() => this.additive(), ['<', '>', '<=', '>='], 'cmp');
  }
  private additive(): Expr {
    return this.binary(() => this.multiplicative(), ['+', '-'], 'arith');
  }
  private multiplicative(): Expr {
    return this.binary(() => this.unary(), ['*', 'div', 'mod'], 'arith');
  }
  private unary(): Expr {
    if (this.is('op', 'neg') || this.is('op', '-')) {
      this.take();
      return { k: 'neg', a: this.unary() };
    }
    return this.union();
  }
  private union(): Expr {
    let a = this.pathExpr();
    while (this.is('op', '|')) {
      this.take();
      a = { k: 'union', a, b: this.pathExpr() };
    }
    return a;
  }

  private startsPrimary(): boolean {
    const t = this.peek();
    if (!t) return false;
    return (
      t.type === 'str' ||
      t.type === 'num' ||
      t.type === 'fn' ||
      (t.type === 'punct' && (t.value === '(' || t.value === '$'))
    );
  }

  private pathExpr(): Expr {
    if (this.startsPrimary()) {
      const primary = this.primary();
      const preds = this.predicates();
      const filter: Expr = preds.length ? { k: 'filter', primary, preds } : primary;
      if (this.is('op', '/') || this.is('op', '//')) {
        const steps: Step[] = [];
        this.relativePath(steps, true);
        return { k: 'path', absolute: false, start: filter, steps };
      }
      return filter;
    }
    if (this.is('op', '/') || this.is('op', '//')) {
      const steps: Step[] = [];
      if (this.is('op', '/')) {
        this.take();
        // A lone "/" selects the document.
        if (this.startsStep()) this.relativePath(steps, false);
      } else this.relativePath(steps, true);
      return { k: 'path', absolute: true, start: null, steps };
    }
    const steps: Step[] = [];
    this.relativePath(steps, false);
    return { k: 'path', absolute: false, start: null, steps };
  }

  private startsStep(): boolean {
    const t = this.peek();
    if (!t) return false;
    return (
      t.type === 'name' ||
      t.type === 'axis' ||
      t.type === 'nodetype' ||
      (t.type === 'punct' && ['.', '..', '@'].includes(t.value))
    );
  }

  /** Steps separated by / or //; `leadingSeparator` when the next token is one. */
  private relativePath(steps: Step[], leadingSeparator: boolean): void {
    if (leadingSeparator) this.separator(steps);
    steps.push(this.step());
    while (this.is('op', '/') || this.is('op', '//')) {
      this.separator(steps);
      steps.push(this.step());
    }
  }

  private separator(steps: Step[]): void {
    const sep = this.take().value;
    if (sep === '//') steps.push(DESCENDANT_OR_SELF);
  }

  private step(): Step {
    if (this.is('punct', '.')) {
      this.take();
      return { axis: 'self', test: { kind: 'node' }, preds: [] };
    }
    if (this.is('punct', '..')) {
      this.take();
      return { axis: 'parent', test: { kind: 'node' }, preds: [] };
    }
    let axis: Axis = 'child';
    if (this.is('punct', '@')) {
      this.take();
      axis = 'attribute';
    } else if (this.is('axis')) {
      const name = this.take().value;
      if (!AXES.has(name)) throw new XPathError(`unsupported axis '${name}'`);
      axis = name as Axis;
      this.expect('punct', '::');
    }
    const t = this.take();
    if (t.type === 'name' && ['some', 'every', 'for'].includes(t.value) && this.is('punct', '$'))
      throw new XPathError(`'${t.value} $var in ...' expressions are not supported by the virtual phone`);
    let test: NodeTest;
    if (t.type === 'name') test = { kind: 'name', name: t.value };
    else if (t.type === 'nodetype') {
      this.expect('punct', '(');
      this.expect('punct', ')');
      if (t.value === 'node') test = { kind: 'node' };
      else if (t.value === 'text') test = { kind: 'text' };
      else throw new XPathError(`${t.value}() is not supported`);
    } else throw new XPathError(`expected a node test but found '${t.value}'`);
    return { axis, test, preds: this.predicates() };
  }

  private predicates(): Expr[] {
    const preds: Expr[] = [];
    while (this.is('punct', '[')) {
      this.take();
      preds.push(this.or());
      this.expect('punct', ']');
    }
    return preds;
  }

  private primary(): Expr {
    const t = this.take();
    if (t.type === 'str') return { k: 'str', v: t.value };
    if (t.type === 'num') return { k: 'num', v: Number(t.value) };
    if (t.type === 'punct' && t.value === '(') {
      const e = this.or();
      this.expect('punct', ')');
      return e;
    }
    if (t.type === 'punct' && t.value === '$') throw new XPathError('variables are not supported');
    if (t.type === 'fn' && this.xpath1 && (XPATH2_FUNCTIONS.has(t.value) || t.value === 'if'))
      // javax.xml.xpath compiles XPath 1.0 only: XPath 2.0 functions are unknown there.
      throw new XPathError(`unknown function ${t.value}() (XPath 1.0: the enforceXPath1 setting is on)`);
    if (t.type === 'fn' && t.value === 'if') {
      // XPath 2.0: if (test) then a else b
      this.expect('punct', '(');
      const test = this.or();
      this.expect('punct', ')');
      this.expect('name', 'then');
      const then = this.or();
      this.expect('name', 'else');
      return { k: 'if', test, then, else: this.or() };
    }
    if (t.type === 'fn') {
      this.expect('punct', '(');
      const args: Expr[] = [];
      if (!this.is('punct', ')')) {
        args.push(this.or());
        while (this.is('punct', ',')) {
          this.take();
          args.push(this.or());
        }
      }
      this.expect('punct', ')');
      return { k: 'fn', name: t.value, args };
    }
    throw new XPathError(`unexpected '${t.value}'`);
  }
}

export function parseXPath(src: string, options: XPathOptions = {}): Expr {
  if (!src.trim()) throw new XPathError('empty expression');
  return new Parser(tokenize(src), options.enforceXPath1 === true).parse();
}

// ---- evaluation ----

interface Ctx {
  node: XNode;
  pos: number;
  size: number;
  doc: SourceElement;
  /** enforceXPath1: XPath 2.0's functions are unknown. */
  xpath1: boolean;
}

function textChild(el: SourceElement): TextNode | null {
  const v = el.attrs.get('text');
  return el.node && v ? { kind: 'text', value: v, owner: el } : null;
}

function children(n: XNode): XNode[] {
  if (!isElement(n)) return [];
  const t = textChild(n);
  return t ? [t, ...n.children] : [...n.children];
}

function parentOf(n: XNode): SourceElement | null {
  return isElement(n) ? n.parent : n.owner;
}

function descendants(n: XNode, out: XNode[]): void {
  for (const c of children(n)) {
    out.push(c);
    descendants(c, out);
  }
}

function docOrder(n: XNode): number {
  if (isElement(n)) return n.order;
  return n.owner.order + (n.kind === 'text' ? 0.25 : 0.5);
}

/** Node-set in document order without duplicates; text and attribute nodes are made on
 * demand, so they are identified by owner and name rather than by object. */
function sortUnique(nodes: XNode[]): XNode[] {
  const key = (n: XNode): unknown =>
    isElement(n) ? n : `${n.owner.order}:${n.kind}:${n.kind === 'attr' ? n.name : ''}`;
  const dedup = new Map<unknown, XNode>();
  for (const n of nodes) if (!dedup.has(key(n))) dedup.set(key(n), n);
  return [...dedup.values()].sort((a, b) => docOrder(a) - docOrder(b));
}

function axisNodes(n: XNode, axis: Axis): XNode[] {
  switch (axis) {
    case 'child':
      return children(n);
    case 'descendant': {
      const out: XNode[] = [];
      descendants(n, out);
      return out;
    }
    case 'descendant-or-self': {
      const out: XNode[] = [n];
      descendants(n, out);
      return out;
    }
    case 'self':
      return [n];
    case 'parent': {
      const p = parentOf(n);
      return p ? [p] : [];
    }
    case 'ancestor':
    case 'ancestor-or-self': {
      const out: XNode[] = axis === 'ancestor-or-self' ? [n] : [];
      for (let p = parentOf(n); p; p = p.parent) out.push(p);
      return out;
    }
    case 'following-sibling':
    case 'preceding-sibling': {
      const p = parentOf(n);
      if (!p || !isElement(n)) return [];
      const sibs = children(p);
      const i = sibs.indexOf(n);
      return axis === 'following-sibling' ? sibs.slice(i + 1) : sibs.slice(0, i).reverse();
    }
    case 'following':
    case 'preceding': {
      const all: XNode[] = [];
      let root: XNode = n;
      for (let p = parentOf(n); p; p = p.parent) root = p;
      descendants(root, all);
      const ancestors = new Set<XNode>(axisNodes(n, 'ancestor'));
      const mine = new Set<XNode>(axisNodes(n, 'descendant'));
      const at = docOrder(n);
      return axis === 'following'
        ? all.filter((x) => docOrder(x) > at && !mine.has(x))
        : all.filter((x) => docOrder(x) < at && !ancestors.has(x)).reverse();
    }
    case 'attribute':
      if (!isElement(n) || n.tag === '#document') return [];
      return [...n.attrs].map(([name, value]): AttrNode => ({ kind: 'attr', name, value, owner: n }));
  }
}

function matches(n: XNode, test: NodeTest, axis: Axis): boolean {
  if (test.kind === 'node') return true;
  if (test.kind === 'text') return !isElement(n) && n.kind === 'text';
  if (axis === 'attribute')
    return !isElement(n) && n.kind === 'attr' && (test.name === '*' || n.name === test.name);
  // The document node is never matched by a name test.
  if (!isElement(n) || n.tag === '#document') return false;
  return test.name === '*' || n.tag === test.name;
}

function stringValue(n: XNode): string {
  if (!isElement(n)) return n.value;
  const parts: string[] = [];
  const all: XNode[] = [];
  descendants(n, all);
  for (const x of all) if (!isElement(x) && x.kind === 'text') parts.push(x.value);
  return parts.join('');
}

/** A sequence's one item (XPath 2.0 refuses more than one where a single value is needed). */
function single(v: AtomSequence): Atom | undefined {
  if (v.items.length > 1)
    throw new XPathDynamicError('XPTY0004', 'A sequence of more than one item is not allowed here');
  return v.items[0];
}

function toStr(v: Value): string {
  if (v instanceof AtomSequence) {
    const item = single(v);
    return item === undefined ? '' : toStr(item);
  }
  if (Array.isArray(v)) return v[0] ? stringValue(v[0]) : '';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : Number.isNaN(v) ? 'NaN' : String(v);
  return String(v);
}

function toNum(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  const s = toStr(v).trim();
  return s === '' ? NaN : Number(s);
}

function toBool(v: Value): boolean {
  if (v instanceof AtomSequence) {
    const item = single(v);
    return item === undefined ? false : toBool(item);
  }
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') return v.length > 0;
  return v;
}

function compareAtoms(op: string, a: string | number | boolean, b: string | number | boolean): boolean {
  if (op === '=' || op === '!=') {
    let eq: boolean;
    if (typeof a === 'boolean' || typeof b === 'boolean') eq = toBool(a) === toBool(b);
    else if (typeof a === 'number' || typeof b === 'number') eq = toNum(a) === toNum(b);
    else eq = a === b;
    return op === '=' ? eq : !eq;
  }
  const x = toNum(a);
  const y = toNum(b);
  switch (op) {
    case '<':
      return x < y;
    case '>':
      return x > y;
    case '<=':
      return x <= y;
    default:
      return x >= y;
  }
}

function compare(op: string, a: Value, b: Value): boolean {
  // XPath 2.0 general comparisons are existential over a sequence, like node-sets in 1.0.
  if (a instanceof AtomSequence) return a.items.some((x) => compare(op, x, b));
  if (b instanceof AtomSequence) return b.items.some((y) => compare(op, a, y));
  if (Array.isArray(a) && Array.isArray(b))
    return a.some((x) => b.some((y) => compareAtoms(op, stringValue(x), stringValue(y))));
  if (Array.isArray(a)) return compareSet(op, a, b as string | number | boolean, false);
  if (Array.isArray(b)) return compareSet(op, b, a, true);
  return compareAtoms(op, a, b);
}

/** A node-set against an atom: true if any node compares true (booleans use the set's). */
function compareSet(op: string, set: XNode[], other: string | number | boolean, flipped: boolean): boolean {
  if (typeof other === 'boolean')
    return flipped ? compareAtoms(op, other, toBool(set)) : compareAtoms(op, toBool(set), other);
  return set.some((n) => {
    const sv: string | number = typeof other === 'number' ? toNum(stringValue(n)) : stringValue(n);
    return flipped ? compareAtoms(op, other, sv) : compareAtoms(op, sv, other);
  });
}

function evalExpr(e: Expr, ctx: Ctx): Value {
  switch (e.k) {
    case 'if':
      return evalExpr(toBool(evalExpr(e.test, ctx)) ? e.then : e.else, ctx);
    case 'or':
      return toBool(evalExpr(e.a, ctx)) || toBool(evalExpr(e.b, ctx));
    case 'and':
      return toBool(evalExpr(e.a, ctx)) && toBool(evalExpr(e.b, ctx));
    case 'cmp':
      return compare(e.op, evalExpr(e.a, ctx), evalExpr(e.b, ctx));
    case 'arith': {
      const x = toNum(evalExpr(e.a, ctx));
      const y = toNum(evalExpr(e.b, ctx));
      switch (e.op) {
        case '+':
          return x + y;
        case '-':
          return x - y;
        case '*':
          return x * y;
        case 'div':
          return x / y;
        default:
          return x % y;
      }
    }
    case 'neg':
      return -toNum(evalExpr(e.a, ctx));
    case 'union': {
      const a = evalExpr(e.a, ctx);
      const b = evalExpr(e.b, ctx);
      if (!Array.isArray(a) || !Array.isArray(b)) throw new XPathError('| needs node-sets on both sides');
      return sortUnique([...a, ...b]);
    }
    case 'str':
      return e.v;
    case 'num':
      return e.v;
    case 'filter': {
      const base = evalExpr(e.primary, ctx);
      if (base instanceof AtomSequence) return filterSequence(base, e.preds, ctx);
      if (!Array.isArray(base)) throw new XPathError('a predicate needs a node-set');
      return applyPredicates(base, e.preds, ctx.doc, ctx.xpath1);
    }
    case 'path': {
      let nodes: XNode[];
      if (e.start) {
        const s = evalExpr(e.start, ctx);
        if (!Array.isArray(s)) throw new XPathError('a path needs a node-set to start from');
        nodes = s;
      } else nodes = e.absolute ? [ctx.doc] : [ctx.node];
      for (const step of e.steps) {
        const next: XNode[] = [];
        for (const n of nodes) {
          const candidates = axisNodes(n, step.axis).filter((x) => matches(x, step.test, step.axis));
          next.push(...applyPredicates(candidates, step.preds, ctx.doc, ctx.xpath1));
        }
        nodes = sortUnique(next);
      }
      return nodes;
    }
    case 'fn':
      return callFunction(e.name, e.args, ctx);
  }
}

/** Whether an expression reads the context item (`.`, a relative path, string()...). */
function usesContextItem(e: Expr): boolean {
  switch (e.k) {
    case 'path':
      return (!e.absolute && !e.start) || (!!e.start && usesContextItem(e.start));
    case 'fn':
      return (
        (e.args.length === 0 && ['string', 'string-length', 'normalize-space', 'number'].includes(e.name)) ||
        e.args.some(usesContextItem)
      );
    case 'str':
    case 'num':
      return false;
    case 'neg':
      return usesContextItem(e.a);
    case 'filter':
      return usesContextItem(e.primary) || e.preds.some(usesContextItem);
    case 'if':
      return usesContextItem(e.test) || usesContextItem(e.then) || usesContextItem(e.else);
    default:
      return usesContextItem(e.a) || usesContextItem(e.b);
  }
}

/**
 * Predicates on a sequence of values, as in `tokenize(@text, ' ')[2]`: positions and
 * position()/last() work; a predicate about the item itself (`[. = 'x']`) is refused, since
 * items here are not context nodes.
 */
function filterSequence(seq: AtomSequence, preds: Expr[], ctx: Ctx): AtomSequence {
  let items = seq.items;
  for (const p of preds) {
    if (usesContextItem(p))
      throw new XPathError('a predicate on a sequence of strings may only use positions and last()');
    const size = items.length;
    items = items.filter((_, i) => {
      const v = evalExpr(p, { ...ctx, pos: i + 1, size });
      return typeof v === 'number' ? v === i + 1 : toBool(v);
    });
  }
  return new AtomSequence(items);
}

/**
 * Filters nodes by each predicate in turn; a number selects by position. Positions count
 * in axis order: axisNodes() lists reverse axes (ancestor, preceding...) nearest first.
 */
function applyPredicates(nodes: XNode[], preds: Expr[], doc: SourceElement, xpath1: boolean): XNode[] {
  let current = nodes;
  for (const p of preds) {
    const size = current.length;
    current = current.filter((node, i) => {
      const v = evalExpr(p, { node, pos: i + 1, size, doc, xpath1 });
      return typeof v === 'number' ? v === i + 1 : toBool(v);
    });
  }
  return current;
}

function callFunction(name: string, args: Expr[], ctx: Ctx): Value {
  const arg = (i: number): Value => {
    const a = args[i];
    if (!a) throw new XPathError(`${name}() is missing argument ${i + 1}`);
    return evalExpr(a, ctx);
  };
  const str = (i: number) => (args.length > i ? toStr(arg(i)) : stringValue(ctx.node));
  const arity = (min: number, max = min) => {
    if (args.length < min || args.length > max)
      throw new XPathError(`${name}() takes ${min === max ? min : `${min} to ${max}`} arguments`);
  };
  switch (name) {
    case 'last':
      arity(0);
      return ctx.size;
    case 'position':
      arity(0);
      return ctx.pos;
    case 'count': {
      arity(1);
      const v = arg(0);
      if (v instanceof AtomSequence) return v.items.length;
      if (!Array.isArray(v)) throw new XPathError('count() needs a node-set');
      return v.length;
    }
    case 'string':
      arity(0, 1);
      return str(0);
    case 'concat':
      if (args.length < 2) throw new XPathError('concat() takes at least 2 arguments');
      return args.map((_, i) => toStr(arg(i))).join('');
    case 'contains':
      arity(2);
      return toStr(arg(0)).includes(toStr(arg(1)));
    case 'starts-with':
      arity(2);
      return toStr(arg(0)).startsWith(toStr(arg(1)));
    case 'substring-before': {
      arity(2);
      const s = toStr(arg(0));
      const i = s.indexOf(toStr(arg(1)));
      return i < 0 ? '' : s.slice(0, i);
    }
    case 'substring-after': {
      arity(2);
      const s = toStr(arg(0));
      const t = toStr(arg(1));
      const i = s.indexOf(t);
      return i < 0 ? '' : s.slice(i + t.length);
    }
    case 'substring': {
      arity(2, 3);
      const s = [...toStr(arg(0))];
      const start = Math.round(toNum(arg(1)));
      const end = args.length > 2 ? start + Math.round(toNum(arg(2))) : Infinity;
      return s.filter((_, i) => i + 1 >= start && i + 1 < end).join('');
    }
    case 'string-length':
      arity(0, 1);
      return [...str(0)].length;
    case 'normalize-space':
      arity(0, 1);
      return str(0).trim().replace(/\s+/g, ' ');
    case 'translate': {
      arity(3);
      const from = [...toStr(arg(1))];
      const to = [...toStr(arg(2))];
      return [...toStr(arg(0))]
        .map((c) => {
          const i = from.indexOf(c);
          return i < 0 ? c : (to[i] ?? '');
        })
        .join('');
    }
    case 'not':
      arity(1);
      return !toBool(arg(0));
    case 'true':
      arity(0);
      return true;
    case 'false':
      arity(0);
      return false;
    case 'boolean':
      arity(1);
      return toBool(arg(0));
    case 'number':
      arity(0, 1);
      return args.length ? toNum(arg(0)) : toNum(stringValue(ctx.node));
    case 'sum': {
      arity(1);
      const v = arg(0);
      if (!Array.isArray(v)) throw new XPathError('sum() needs a node-set');
      return v.reduce((s, n) => s + toNum(stringValue(n)), 0);
    }
    case 'floor':
      arity(1);
      return Math.floor(toNum(arg(0)));
    case 'ceiling':
      arity(1);
      return Math.ceil(toNum(arg(0)));
    case 'round':
      arity(1);
      // XPath rounds halves up (round(-2.5) is -2), as Math.round does.
      return Math.round(toNum(arg(0)));
    default:
      if (!ctx.xpath1) return callXPath2Function(name, args, ctx);
      throw new XPathError(`unknown function ${name}()`);
  }
}

// ---- XPath 2.0 functions (PsychoPath's, as the server bundles it) ----

/**
 * A regex for matches(), tokenize() or replace(), as PsychoPath builds it
 * (AbstractRegExFunction.compileAndExecute): the XPath pattern goes to
 * java.util.regex.Pattern as is, with UNIX_LINES always set (only \n ends a line) and the
 * flags s (DOTALL), m (MULTILINE), i (CASE_INSENSITIVE, dropped when the pattern has a
 * \p{..} or \P{..}) and x (COMMENTS). So XSD-only syntax such as \i and \c is refused
 * as Android's Pattern refuses it. replace() uses String.replaceAll: no flags at all.
 */
function xpathRegex(
  fn: string,
  pattern: string,
  flags: string | null,
  unixLines: boolean,
): CompiledJavaRegex {
  const f = flags ?? '';
  const hasProperty = pattern.includes('\\p{') || pattern.includes('\\P{');
  try {
    return translateJavaRegex(pattern, {
      d: unixLines,
      s: f.includes('s'),
      m: f.includes('m'),
      i: f.includes('i') && !hasProperty,
      x: f.includes('x'),
    });
  } catch (err) {
    if (err instanceof JavaRegexSyntaxError)
      // FORX0002; matches() adds the PatternSyntaxException's message, the others do not.
      throw new XPathDynamicError(
        'FORX0002',
        fn === 'matches' ? `Invalid regular expression. ${err.message}` : 'Invalid regular expression.',
      );
    if (err instanceof JavaRegexUnsupportedError) throw new XPathError(`${fn}(): ${err.message}`);
    throw err;
  }
}

/**
 * matches() and tokenize() accept a flags argument only if it is a substring of "smix"
 * (PsychoPath tests validflags.indexOf(flags)): "i", "sm" and "smix" pass, "is" does not.
 */
function checkRegexFlags(flags: string): void {
  if (flags !== '' && !'smix'.includes(flags))
    throw new XPathDynamicError('FORX0001', 'Invalid regular expression flag parameter.');
}

/** A single string argument: an empty sequence is '', more than one item is an error. */
function oneString(v: Value, fn: string, n: number): string {
  if (Array.isArray(v) && v.length > 1)
    throw new XPathDynamicError('XPTY0004', `argument ${n} of ${fn}() is a sequence of more than one item`);
  return toStr(v);
}

/** String.replaceAll's replacement as Android's Matcher reads it: $n (one digit) and \x. */
function expandReplacement(replacement: string, groups: (string | undefined)[]): string {
  let out = '';
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i] ?? '';
    const next = replacement[i + 1];
    if (c === '\\') {
      if (next === undefined) throw new XPathError('replace(): a replacement ending in \\ is not supported');
      out += next;
      i++;
    } else if (c === '$') {
      if (next === undefined || !/[0-9]/.test(next))
        throw new XPathError(
          "replace(): '$' not followed by a group number is not supported; write \\$ for a dollar sign",
        );
      const n = Number(next);
      if (n >= groups.length) throw new XPathDynamicError('FORX0003', 'invalid regex.');
      out += groups[n] ?? '';
      i++;
    } else out += c;
  }
  return out;
}

function callXPath2Function(name: string, args: Expr[], ctx: Ctx): Value {
  const arg = (i: number): Value => {
    const a = args[i];
    if (!a) throw new XPathError(`${name}() is missing argument ${i + 1}`);
    return evalExpr(a, ctx);
  };
  const str = (i: number) => oneString(arg(i), name, i + 1);
  const arity = (min: number, max = min) => {
    if (args.length < min || args.length > max)
      throw new XPathError(`${name}() takes ${min === max ? min : `${min} to ${max}`} arguments`);
  };
  switch (name) {
    case 'ends-with':
      arity(2);
      return str(0).endsWith(str(1));
    case 'lower-case':
      arity(1);
      return str(0).toLowerCase();
    case 'upper-case':
      arity(1);
      return str(0).toUpperCase();
    case 'abs':
      arity(1);
      return Math.abs(toNum(arg(0)));
    case 'string-join': {
      arity(2);
      const v = arg(0);
      const parts =
        v instanceof AtomSequence ? v.items.map(toStr) : Array.isArray(v) ? v.map(stringValue) : [toStr(v)];
      return parts.join(str(1));
    }
    case 'matches': {
      // FnMatches: true if the pattern is found anywhere in the input (Matcher.find()).
      arity(2, 3);
      const input = str(0);
      const flags = args.length > 2 ? str(2) : null;
      if (flags !== null) checkRegexFlags(flags);
      // PsychoPath rewrites XSD's class subtraction "-[" as Java's "&&[^" before compiling.
      const pattern = str(1).replaceAll('-[', '&&[^');
      const { source, flags: f } = xpathRegex(name, pattern, flags, true);
      return new RegExp(source, f).test(input);
    }
    case 'tokenize': {
      // FnTokenize: the parts between matches; a trailing empty part is dropped.
      arity(2, 3);
      const input = str(0);
      const flags = args.length > 2 ? str(2) : null;
      if (flags !== null) checkRegexFlags(flags);
      const { source, flags: f } = xpathRegex(name, str(1), flags, true);
      const tokens: string[] = [];
      let start = 0;
      for (const m of input.matchAll(new RegExp(source, `${f}g`))) {
        if (m[0] === '') throw new XPathDynamicError('FORX0003', 'Invalid regular expression.');
        tokens.push(input.slice(start, m.index));
        start = m.index + m[0].length;
      }
      if (start < input.length) tokens.push(input.slice(start));
      return new AtomSequence(tokens);
    }
    case 'replace': {
      // FnReplace: input.replaceAll(pattern, replacement). Flags are checked (one of s, m,
      // i, x must be there) but not applied.
      arity(3, 4);
      const input = str(0);
      const flags = args.length > 3 ? str(3) : '';
      if (flags !== '' && !/[smix]/.test(flags))
        throw new XPathDynamicError('FORX0001', 'Invalid regular expression. flags');
      const { source, flags: f, groups } = xpathRegex(name, str(1), null, false);
      const replacement = str(2);
      return input.replace(new RegExp(source, `${f}g`), (...m: unknown[]) =>
        expandReplacement(
          replacement,
          groups.map((js) => m[js] as string | undefined),
        ),
      );
    }
    default:
      throw new XPathError(`unknown function ${name}()`);
  }
}

/**
 * Evaluates an expression against a document and returns the matched elements in document
 * order. An expression that yields anything other than elements is an invalid selector
 * for finding elements. Pass the server's `enforceXPath1` setting in `options`.
 */
export function selectElements(
  expr: string,
  doc: SourceElement,
  options: XPathOptions = {},
): SourceElement[] {
  const v = evaluateXPath(expr, doc, options);
  if (!Array.isArray(v)) throw new XPathError(`the expression '${expr}' does not select elements`);
  const out: SourceElement[] = [];
  for (const n of v) {
    if (!isElement(n))
      throw new XPathError(`the expression '${expr}' selects attributes or text, not elements`);
    if (n.node) out.push(n);
  }
  return out;
}

/**
 * Evaluates any expression (tests and debugging): a node-set, string, number, boolean or
 * sequence of values.
 */
export function evaluateXPath(expr: string, doc: SourceElement, options: XPathOptions = {}): Value {
  const xpath1 = options.enforceXPath1 === true;
  return evalExpr(parseXPath(expr, options), { node: doc, pos: 1, size: 1, doc, xpath1 });
}
