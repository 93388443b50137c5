/**
 * The `-android uiautomator` locator: Java-like UiSelector chains such as
 * `new UiSelector().resourceId("pkg:id/x").instance(0)`, several separated by `;` (any of
 * them may match), and `new UiScrollable(<selector>).scrollIntoView(<selector>)`. Parsing
 * is strict: an unknown method is an invalid selector, not a silent match-all.
 */
import type { UiNodeInfo } from '../ui/types.js';
import { javaFullMatcher, JavaRegexSyntaxError, JavaRegexUnsupportedError } from './java-regex.js';

export class UiSelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UiSelectorError';
  }
}

/**
 * A *Matches() pattern that Android's Pattern.compile rejects. The real server reports it as
 * an unknown error (UiExpressionParser.invokeMethod wraps the PatternSyntaxException thrown
 * inside UiSelector in a UiAutomator2Exception); the message is that exception's.
 */
export class UiSelectorPatternError extends UiSelectorError {
  constructor(message: string) {
    super(`java.util.regex.PatternSyntaxException: ${message}`);
    this.name = 'UiSelectorPatternError';
  }
}

type Arg = string | number | boolean | Selector;

interface Condition {
  method: string;
  test: (e: Entry) => boolean;
}

export interface Selector {
  conditions: Condition[];
  instance: number | null;
  child: Selector | null;
  fromParent: Selector | null;
}

export type ScrollAction =
  | { kind: 'scrollIntoView'; target: Selector }
  | { kind: 'toEnd' }
  | { kind: 'toBeginning' }
  | { kind: 'forward' }
  | { kind: 'backward' };

export type Statement =
  | { kind: 'selector'; selector: Selector }
  | { kind: 'scrollable'; container: Selector; actions: ScrollAction[]; maxSwipes: number };

// ---- tokenizer ----

type Tok = { t: 'id'; v: string } | { t: 'str'; v: string } | { t: 'num'; v: number } | { t: 'p'; v: string };

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i] ?? '';
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '"' || ch === "'") {
      let v = '';
      i++;
      for (;;) {
        const c = src[i];
        if (c === undefined) throw new UiSelectorError('unterminated string');
        i++;
        if (c === ch) break;
        if (c === '\\') {
          const e = src[i++];
          if (e === 'n') v += '\n';
          else if (e === 't') v += '\t';
          else if (e === 'u') {
            v += String.fromCharCode(parseInt(src.slice(i, i + 4), 16));
            i += 4;
          } else v += e ?? '';
        } else v += c;
      }
      out.push({ t: 'str', v });
    } else if (/[-0-9]/.test(ch)) {
      const m = /^-?[0-9]+/.exec(src.slice(i));
      if (!m) throw new UiSelectorError(`unexpected '${ch}'`);
      out.push({ t: 'num', v: Number(m[0]) });
      i += m[0].length;
      // Java long/int suffixes.
      if (/[lL]/.test(src[i] ?? '')) i++;
    } else if (/[A-Za-z_$]/.test(ch)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$.]*/.exec(src.slice(i));
      const word = m?.[0] ?? ch;
      i += word.length;
      const parts = word.split('.');
      const last = parts[parts.length - 1] ?? word;
      // A qualified class name (androidx.test.uiautomator.UiSelector) means its simple
      // name; otherwise dots separate calls (`UiSelector.text` never occurs, but
      // `x.text` after a closing parenthesis is tokenized the same way).
      if (last === 'UiSelector' || last === 'UiScrollable') {
        out.push({ t: 'id', v: last });
        continue;
      }
      parts.forEach((p, k) => {
        if (k > 0) out.push({ t: 'p', v: '.' });
        if (p) out.push({ t: 'id', v: p });
      });
    } else if ('().,;'.includes(ch)) {
      out.push({ t: 'p', v: ch });
      i++;
    } else throw new UiSelectorError(`unexpected '${ch}' at ${i}`);
  }
  return out;
}

// ---- parser ----

interface Entry {
  node: UiNodeInfo;
  parent: Entry | null;
  /** Index among siblings. */
  index: number;
}

/**
 * textMatches() and the other *Matches() methods: UiSelector compiles the argument with
 * `Pattern.compile(regex)` (no flags) and a node matches when
 * `pattern.matcher(value).matches()`, i.e. the whole value matches. The pattern is Java's
 * (as Android's Pattern reads it), translated by java-regex.ts. A pattern Android rejects
 * throws UiSelectorPatternError; a pattern the virtual phone cannot model is refused as an
 * invalid selector.
 */
const fullMatch = (method: string, re: string): ((value: string) => boolean) => {
  try {
    return javaFullMatcher(re);
  } catch (err) {
    if (err instanceof JavaRegexSyntaxError) throw new UiSelectorPatternError(err.message);
    if (err instanceof JavaRegexUnsupportedError)
      throw new UiSelectorError(`${method}("${re}"): ${err.message}`);
    throw err;
  }
};

const STRING_METHODS: Record<string, (e: Entry, v: string) => boolean> = {
  text: (e, v) => e.node.text === v,
  textContains: (e, v) => e.node.text.includes(v),
  textStartsWith: (e, v) => e.node.text.startsWith(v),
  description: (e, v) => e.node.contentDesc === v,
  descriptionContains: (e, v) => e.node.contentDesc.includes(v),
  descriptionStartsWith: (e, v) => e.node.contentDesc.startsWith(v),
  resourceId: (e, v) => e.node.resourceId === v,
  className: (e, v) => e.node.className === v,
  packageName: (e, v) => e.node.packageName === v,
};

const REGEX_METHODS: Record<string, (e: Entry) => string> = {
  textMatches: (e) => e.node.text,
  descriptionMatches: (e) => e.node.contentDesc,
  resourceIdMatches: (e) => e.node.resourceId,
  classNameMatches: (e) => e.node.className,
  packageNameMatches: (e) => e.node.packageName,
};

const BOOL_METHODS: Record<string, (n: UiNodeInfo) => boolean> = {
  checkable: (n) => n.checkable,
  checked: (n) => n.checked,
  clickable: (n) => n.clickable,
  enabled: (n) => n.enabled,
  focusable: (n) => n.focusable,
  focused: (n) => n.focused,
  longClickable: (n) => n.longClickable,
  scrollable: (n) => n.scrollable,
  selected: (n) => n.selected,
};

class Parser {
  private i = 0;
  constructor(private readonly toks: Tok[]) {}

  private peek(): Tok | undefined {
    return this.toks[this.i];
  }
  private isP(v: string): boolean {
    const t = this.peek();
    return t?.t === 'p' && t.v === v;
  }
  private isId(v: string): boolean {
    const t = this.peek();
    return t?.t === 'id' && t.v === v;
  }
  private take(): Tok {
    const t = this.toks[this.i++];
    if (!t) throw new UiSelectorError('unexpected end of selector');
    return t;
  }
  private expectP(v: string): void {
    const t = this.take();
    if (t.t !== 'p' || t.v !== v) throw new UiSelectorError(`expected '${v}'`);
  }
  private ident(): string {
    const t = this.take();
    if (t.t !== 'id') throw new UiSelectorError('expected a method name');
    return t.v;
  }

  statements(): Statement[] {
    const out: Statement[] = [];
    while (this.peek()) {
      if (this.isP(';')) {
        this.take();
        continue;
      }
      out.push(this.statement());
      if (this.peek() && !this.isP(';')) throw new UiSelectorError('expected ; between selectors');
    }
    if (out.length === 0) throw new UiSelectorError('empty selector');
    return out;
  }

  private statement(): Statement {
    if (this.isId('new')) {
      const save = this.i;
      this.take();
      if (this.isId('UiScrollable')) return this.scrollable();
      this.i = save;
    }
    return { kind: 'selector', selector: this.selector() };
  }

  /** `new UiSelector()` followed by calls, or the calls alone (the prefix is optional). */
  private selector(): Selector {
    const sel: Selector = { conditions: [], instance: null, child: null, fromParent: null };
    if (this.isId('new')) {
      this.take();
      const cls = this.ident();
      if (cls !== 'UiSelector') throw new UiSelectorError(`${cls} is not supported here; use UiSelector`);
      this.expectP('(');
      this.expectP(')');
    } else if (this.isId('UiSelector')) {
      // Tolerate `UiSelector().text(...)` without `new`.
      this.take();
      this.expectP('(');
      this.expectP(')');
    } else if (!this.isP('.')) {
      this.call(sel);
    }
    while (this.isP('.')) {
      this.take();
      this.call(sel);
    }
    return sel;
  }

  private args(): Arg[] {
    this.expectP('(');
    const args: Arg[] = [];
    while (!this.isP(')')) {
      const t = this.peek();
      if (t?.t === 'str' || t?.t === 'num') {
        this.take();
        args.push(t.v);
      } else if (t?.t === 'id' && (t.v === 'true' || t.v === 'false')) {
        this.take();
        args.push(t.v === 'true');
      } else args.push(this.selector());
      if (this.isP(',')) this.take();
      else if (!this.isP(')')) throw new UiSelectorError("expected ',' or ')'");
    }
    this.expectP(')');
    return args;
  }

  private call(sel: Selector): void {
    const method = this.ident();
    const args = this.args();
    const one = <T extends Arg>(check: (a: Arg) => a is T, what: string): T => {
      const a = args[0];
      if (args.length !== 1 || a === undefined || !check(a))
        throw new UiSelectorError(`${method}() takes one ${what}`);
      return a;
    };
    const isStr = (a: Arg): a is string => typeof a === 'string';
    const isNum = (a: Arg): a is number => typeof a === 'number';
    const isBool = (a: Arg): a is boolean => typeof a === 'boolean';
    const isSel = (a: Arg): a is Selector => typeof a === 'object';

    const stringTest = STRING_METHODS[method];
    if (stringTest) {
      const v = one(isStr, 'string');
      sel.conditions.push({ method, test: (e) => stringTest(e, v) });
      return;
    }
    const regexOf = REGEX_METHODS[method];
    if (regexOf) {
      const matches = fullMatch(method, one(isStr, 'string'));
      sel.conditions.push({ method, test: (e) => matches(regexOf(e)) });
      return;
    }
    const flag = BOOL_METHODS[method];
    if (flag) {
      const v = args.length === 0 ? true : one(isBool, 'boolean');
      sel.conditions.push({ method, test: (e) => flag(e.node) === v });
      return;
    }
    switch (method) {
      case 'index': {
        const v = one(isNum, 'number');
        sel.conditions.push({ method, test: (e) => e.index === v });
        return;
      }
      case 'instance':
        sel.instance = one(isNum, 'number');
        return;
      case 'childSelector':
        sel.child = one(isSel, 'selector');
        return;
      case 'fromParent':
        sel.fromParent = one(isSel, 'selector');
        return;
      default:
        throw new UiSelectorError(`UiSelector.${method}() is not supported`);
    }
  }

  private scrollable(): Statement {
    this.take(); // UiScrollable
    const inner = this.args();
    const container = inner[0];
    if (inner.length !== 1 || typeof container !== 'object')
      throw new UiSelectorError('UiScrollable takes one UiSelector');
    const actions: ScrollAction[] = [];
    let maxSwipes = 30;
    while (this.isP('.')) {
      this.take();
      const method = this.ident();
      const args = this.args();
      const a0 = args[0];
      switch (method) {
        case 'scrollIntoView':
          if (typeof a0 !== 'object') throw new UiSelectorError('scrollIntoView() takes a UiSelector');
          actions.push({ kind: 'scrollIntoView', target: a0 });
          break;
        case 'scrollTextIntoView':
          if (typeof a0 !== 'string') throw new UiSelectorError('scrollTextIntoView() takes a string');
          actions.push({ kind: 'scrollIntoView', target: textSelector('text', a0) });
          break;
        case 'getChildByText':
        case 'getChildByDescription': {
          const a1 = args[1];
          if (typeof a0 !== 'object' || typeof a1 !== 'string')
            throw new UiSelectorError(`${method}() takes a UiSelector and a string`);
          const key = method === 'getChildByText' ? 'text' : 'description';
          actions.push({
            kind: 'scrollIntoView',
            target: { ...a0, conditions: [...a0.conditions, ...textSelector(key, a1).conditions] },
          });
          break;
        }
        case 'scrollToEnd':
        case 'flingToEnd':
          actions.push({ kind: 'toEnd' });
          break;
        case 'scrollToBeginning':
        case 'flingToBeginning':
          actions.push({ kind: 'toBeginning' });
          break;
        case 'scrollForward':
        case 'flingForward':
          actions.push({ kind: 'forward' });
          break;
        case 'scrollBackward':
        case 'flingBackward':
          actions.push({ kind: 'backward' });
          break;
        case 'setMaxSearchSwipes':
          if (typeof a0 !== 'number') throw new UiSelectorError('setMaxSearchSwipes() takes a number');
          maxSwipes = a0;
          break;
        case 'setAsVerticalList':
        case 'setAsHorizontalList':
        case 'setSwipeDeadZonePercentage':
          break;
        default:
          throw new UiSelectorError(`UiScrollable.${method}() is not supported`);
      }
    }
    return { kind: 'scrollable', container, actions, maxSwipes };
  }
}

function textSelector(key: 'text' | 'description', v: string): Selector {
  const test = STRING_METHODS[key];
  return {
    conditions: test ? [{ method: key, test: (e) => test(e, v) }] : [],
    instance: null,
    child: null,
    fromParent: null,
  };
}

export function parseUiSelector(src: string): Statement[] {
  return new Parser(tokenize(src)).statements();
}

// ---- matching ----

function entries(root: UiNodeInfo): Entry[] {
  const out: Entry[] = [];
  const visit = (node: UiNodeInfo, parent: Entry | null, index: number) => {
    const e: Entry = { node, parent, index };
    out.push(e);
    node.children.forEach((c, i) => visit(c, e, i));
  };
  visit(root, null, 0);
  return out;
}

function isInside(e: Entry, ancestor: Entry): boolean {
  for (let p = e.parent; p; p = p.parent) if (p === ancestor) return true;
  return false;
}

function resolve(sel: Selector, pool: Entry[], all: Entry[]): Entry[] {
  let found = pool.filter((e) => sel.conditions.every((c) => c.test(e)));
  if (sel.instance !== null) {
    const one = found[sel.instance];
    found = one ? [one] : [];
  }
  const child = sel.child;
  if (child) {
    const out: Entry[] = [];
    for (const f of found)
      out.push(
        ...resolve(
          child,
          all.filter((e) => isInside(e, f)),
          all,
        ),
      );
    found = out;
  }
  const fromParent = sel.fromParent;
  if (fromParent) {
    const out: Entry[] = [];
    for (const f of found) {
      const p = f.parent;
      if (p)
        out.push(
          ...resolve(
            fromParent,
            all.filter((e) => isInside(e, p)),
            all,
          ),
        );
    }
    found = out;
  }
  return [...new Set(found)];
}

/** Nodes matching a selector, in document order, searching below `within` when given. */
export function matchSelector(sel: Selector, root: UiNodeInfo, within?: UiNodeInfo): UiNodeInfo[] {
  const all = entries(root);
  const scope = within ? all.find((e) => e.node === within) : undefined;
  const pool = scope ? all.filter((e) => isInside(e, scope)) : all;
  const found = new Set(resolve(sel, pool, all).map((e) => e.node));
  return all.filter((e) => found.has(e.node)).map((e) => e.node);
}
