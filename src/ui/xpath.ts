/**
 * The XPath subset that Android tests use, evaluated over the host's UI tree:
 * `/` and `//` steps, `.` and `..`, name tests (a class name, `*`, `node()`), and
 * predicates with `@attr`, `@attr='v'`, `@attr!='v'`, `contains()`, `starts-with()`,
 * `text()`, `not()`, `and`, `or`, parentheses and positions (`[1]`, `[last()]`). Element
 * names are class names, as in the UiAutomator2 server's source.
 */
import type { UiNode } from './tree.js';

type Expr =
  | { kind: 'or' | 'and'; left: Expr; right: Expr }
  | { kind: 'not'; inner: Expr }
  | { kind: 'position'; index: number | 'last' }
  | { kind: 'has'; attr: string }
  | { kind: 'compare'; attr: string; op: '=' | '!='; value: string }
  | { kind: 'fn'; name: 'contains' | 'starts-with'; attr: string; value: string };

interface PathStep {
  axis: 'child' | 'descendant' | 'self' | 'parent';
  name: string;
  predicates: Expr[];
}

const TOKEN = /\s*(\/\/|\/|\.\.|\.|\[|\]|\(|\)|@|,|!=|=|\*|'[^']*'|"[^"]*"|\d+|[A-Za-z_][\w.:-]*)/y;

function tokenize(expression: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < expression.length) {
    if (/^\s*$/.test(expression.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(expression);
    if (!m)
      throw new SyntaxError(
        `Unsupported XPath near ${JSON.stringify(expression.slice(at))} in ${expression}`,
      );
    out.push(m[1]!);
    at = TOKEN.lastIndex;
  }
  return out;
}

class Parser {
  #i = 0;
  constructor(
    readonly tokens: string[],
    readonly source: string,
  ) {}

  fail(what: string): never {
    throw new SyntaxError(`Unsupported XPath (${what}) in ${this.source}`);
  }
  peek(): string | undefined {
    return this.tokens[this.#i];
  }
  next(): string {
    const t = this.tokens[this.#i++];
    if (t === undefined) this.fail('unexpected end');
    return t;
  }
  expect(t: string): void {
    if (this.next() !== t) this.fail(`expected ${t}`);
  }

  path(): PathStep[] {
    const steps: PathStep[] = [];
    let axis: PathStep['axis'] = 'child';
    const first = this.peek();
    if (first === '//') {
      this.next();
      axis = 'descendant';
    } else if (first === '/') this.next();
    for (;;) {
      steps.push(this.step(axis));
      const sep = this.peek();
      if (sep === '/') axis = 'child';
      else if (sep === '//') axis = 'descendant';
      else break;
      this.next();
    }
    if (this.peek() !== undefined) this.fail(`unexpected ${this.peek()}`);
    return steps;
  }

  step(axis: PathStep['axis']): PathStep {
    const t = this.next();
    if (t === '.') return { axis: 'self', name: '*', predicates: this.predicates() };
    if (t === '..') return { axis: 'parent', name: '*', predicates: this.predicates() };
    let name = t;
    if (t === 'node') {
      this.expect('(');
      this.expect(')');
      name = '*';
    } else if (t !== '*' && !/^[A-Za-z_]/.test(t)) this.fail(`bad step ${t}`);
    return { axis, name, predicates: this.predicates() };
  }

  predicates(): Expr[] {
    const out: Expr[] = [];
    while (this.peek() === '[') {
      this.next();
      out.push(this.or());
      this.expect(']');
    }
    return out;
  }

  or(): Expr {
    let left = this.and();
    while (this.peek() === 'or') {
      this.next();
      left = { kind: 'or', left, right: this.and() };
    }
    return left;
  }

  and(): Expr {
    let left = this.primary();
    while (this.peek() === 'and') {
      this.next();
      left = { kind: 'and', left, right: this.primary() };
    }
    return left;
  }

  literal(): string {
    const t = this.next();
    if (!/^['"]/.test(t)) this.fail(`expected a quoted string, got ${t}`);
    return t.slice(1, -1);
  }

  /** `@name` or `text()`: both read an attribute. */
  attribute(): string {
    const t = this.next();
    if (t === '@') return this.next();
    if (t === 'text') {
      this.expect('(');
      this.expect(')');
      return 'text';
    }
    return this.fail(`expected @attribute, got ${t}`);
  }

  primary(): Expr {
    const t = this.peek();
    if (t === undefined) this.fail('unexpected end');
    if (/^\d+$/.test(t)) {
      this.next();
      return { kind: 'position', index: Number(t) };
    }
    if (t === '(') {
      this.next();
      const inner = this.or();
      this.expect(')');
      return inner;
    }
    if (t === 'last') {
      this.next();
      this.expect('(');
      this.expect(')');
      return { kind: 'position', index: 'last' };
    }
    if (t === 'not') {
      this.next();
      this.expect('(');
      const inner = this.or();
      this.expect(')');
      return { kind: 'not', inner };
    }
    if (t === 'contains' || t === 'starts-with') {
      this.next();
      this.expect('(');
      const attr = this.attribute();
      this.expect(',');
      const value = this.literal();
      this.expect(')');
      return { kind: 'fn', name: t, attr, value };
    }
    const attr = this.attribute();
    const op = this.peek();
    if (op === '=' || op === '!=') {
      this.next();
      return { kind: 'compare', attr, op, value: this.literal() };
    }
    return { kind: 'has', attr };
  }
}

const cache = new Map<string, PathStep[]>();

function compile(expression: string): PathStep[] {
  let steps = cache.get(expression);
  if (!steps) {
    steps = new Parser(tokenize(expression), expression).path();
    cache.set(expression, steps);
  }
  return steps;
}

function attr(node: UiNode, name: string): string | undefined {
  if (name === 'class') return node.className;
  return node.attributes[name];
}

function test(e: Expr, node: UiNode, position: number, size: number): boolean {
  switch (e.kind) {
    case 'or':
      return test(e.left, node, position, size) || test(e.right, node, position, size);
    case 'and':
      return test(e.left, node, position, size) && test(e.right, node, position, size);
    case 'not':
      return !test(e.inner, node, position, size);
    case 'position':
      return position === (e.index === 'last' ? size : e.index);
    case 'has':
      return attr(node, e.attr) !== undefined;
    case 'compare':
      return (attr(node, e.attr) === e.value) === (e.op === '=');
    case 'fn': {
      const v = attr(node, e.attr) ?? '';
      return e.name === 'contains' ? v.includes(e.value) : v.startsWith(e.value);
    }
  }
}

function nameMatches(node: UiNode, name: string): boolean {
  return name === '*' || node.tag === name || node.className === name;
}

function selfAndDescendants(node: UiNode, out: UiNode[]): void {
  out.push(node);
  for (const c of node.children) selfAndDescendants(c, out);
}

/** The views `expression` selects, evaluated from `context` (absolute paths start there too). */
export function evaluateXPath(expression: string, context: UiNode): UiNode[] {
  let current: UiNode[] = [context];
  for (const step of compile(expression)) {
    const next = new Set<UiNode>();
    for (const ctx of current) {
      // `//x` is descendant-or-self::node()/child::x, so positions count among siblings.
      const parents: UiNode[] = [];
      if (step.axis === 'descendant') selfAndDescendants(ctx, parents);
      else parents.push(ctx);
      for (const p of parents) {
        let candidates =
          step.axis === 'self'
            ? [p]
            : step.axis === 'parent'
              ? p.parent
                ? [p.parent]
                : []
              : p.children.filter((c) => nameMatches(c, step.name));
        for (const pred of step.predicates) {
          const size = candidates.length;
          candidates = candidates.filter((c, i) => test(pred, c, i + 1, size));
        }
        for (const c of candidates) next.add(c);
      }
    }
    current = [...next];
  }
  return current.filter((n) => n.parent !== null).sort((a, b) => a.order - b.order);
}
