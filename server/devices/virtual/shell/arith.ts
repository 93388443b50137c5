/**
 * mksh's arithmetic, for `$((...))` and `let`: 32-bit signed integers that wrap around, C's
 * operators with C's precedence (unary `+ - ! ~ ++ --`, `* / %`, `+ -`, `<< >>`, comparisons,
 * `& ^ |`, `&& ||` that skip their right side, `?:`, the assignments `= *= /= %= += -= <<=
 * >>= &= ^= |=`, and `,`), numbers as `42`, `0x2a` or `BASE#DIGITS` (`2#101010`, `16#2a`;
 * `010` is ten, as mksh reads it outside POSIX mode), and variables whose value is a number
 * or, in turn, an expression. Errors say what mksh says (`1/0: zero divisor`,
 * `1+: unexpected 'end of expression'`).
 */
import { ShellSyntaxError, tooDeep } from './parse.js';

/** What an expression reads and assigns: the shell's variables. */
export interface ArithmeticVariables {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
  /** Whether an assignment to `name` is refused (`readonly`). */
  readonly?(name: string): boolean;
}

/** An expression mksh refuses; the message is mksh's, after `sh: `. */
export class ArithmeticError extends ShellSyntaxError {}

type Token =
  | { kind: 'num'; value: number; text: string }
  | { kind: 'var'; name: string }
  | { kind: 'op'; op: string }
  | { kind: 'end' };

/** Operators, longest first, so that `<<=` is not read as `<<` and `=`. */
const OPERATORS = [
  '<<=',
  '>>=',
  '++',
  '--',
  '==',
  '!=',
  '*=',
  '/=',
  '%=',
  '+=',
  '-=',
  '&=',
  '^=',
  '|=',
  '<<',
  '>>',
  '<=',
  '>=',
  '&&',
  '||',
  '=',
  '<',
  '>',
  '*',
  '/',
  '%',
  '+',
  '-',
  '&',
  '^',
  '|',
  '?',
  ':',
  ',',
  '~',
  '!',
  '(',
  ')',
];

/** Binary operators by precedence, loosest first (assignment and `?:` are handled apart). */
const BINARY: readonly (readonly string[])[] = [
  ['||'],
  ['&&'],
  ['|'],
  ['^'],
  ['&'],
  ['==', '!='],
  ['<', '<=', '>', '>='],
  ['<<', '>>'],
  ['+', '-'],
  ['*', '/', '%'],
];

const ASSIGNMENTS = new Set(['=', '*=', '/=', '%=', '+=', '-=', '<<=', '>>=', '&=', '^=', '|=']);

/** How deep a variable's value may refer to other variables' expressions. */
const MAX_DEPTH = 32;

/** Evaluates `expression` as mksh does; assignments change `vars`. */
export function evaluateArithmetic(expression: string, vars: ArithmeticVariables): number {
  try {
    return new Evaluator(expression, vars, new Set()).evaluate();
  } catch (error) {
    if (tooDeep(error))
      throw new ArithmeticError(`${expression.slice(0, 40)}: nested too deeply for the virtual phone`);
    throw error;
  }
}

/** A value, and the variable it was read from (what `=` and `++` assign to). */
interface Operand {
  value: number;
  name: string | null;
}

class Evaluator {
  private pos = 0;
  private token: Token = { kind: 'end' };
  /** Inside the side of `&&`, `||` or `?:` that is not taken: nothing is assigned. */
  private skipping = 0;

  constructor(
    private readonly source: string,
    private readonly vars: ArithmeticVariables,
    /** Variables whose value is being evaluated (a value that refers to itself recurses). */
    private readonly evaluating: Set<string>,
  ) {}

  evaluate(): number {
    this.next();
    if (this.atEnd()) return 0;
    const result = this.value(this.comma());
    if (!this.atEnd()) this.unexpected();
    return result;
  }

  private atEnd(): boolean {
    return this.token.kind === 'end';
  }

  private fail(message: string): never {
    throw new ArithmeticError(`${this.source}: ${message}`);
  }

  private unexpected(): never {
    const t = this.token;
    const what =
      t.kind === 'end' ? 'end of expression' : t.kind === 'num' ? t.text : t.kind === 'var' ? t.name : t.op;
    this.fail(`unexpected '${what}'`);
  }

  private next(): void {
    const s = this.source;
    while (this.pos < s.length && /\s/.test(s[this.pos]!)) this.pos++;
    if (this.pos >= s.length) {
      this.token = { kind: 'end' };
      return;
    }
    const rest = s.slice(this.pos);
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
    if (name) {
      this.pos += name[0].length;
      this.token = { kind: 'var', name: s[this.pos] === '[' ? this.element(name[0]) : name[0] };
      return;
    }
    const number = /^[0-9][0-9A-Za-z#]*/.exec(rest);
    if (number) {
      this.pos += number[0].length;
      const value = parseNumber(number[0]);
      if (value === null) this.fail(`bad number '${number[0]}'`);
      this.token = { kind: 'num', value, text: number[0] };
      return;
    }
    const op = OPERATORS.find((o) => rest.startsWith(o));
    if (!op) {
      this.token = { kind: 'op', op: rest[0]! };
      this.unexpected();
    }
    this.pos += op.length;
    this.token = { kind: 'op', op };
  }

  private isOp(...ops: string[]): string | null {
    return this.token.kind === 'op' && ops.includes(this.token.op) ? this.token.op : null;
  }

  /**
   * `NAME[EXPR]`, the lexer at its `[`: the element's name for the shell's variables, its
   * subscript evaluated (`a[i+1]` is `a[2]` when i is 1), wrapped to 32 bits unsigned as mksh's.
   */
  private element(name: string): string {
    const s = this.source;
    let depth = 0;
    for (let i = this.pos; i < s.length; i++) {
      if (s[i] === '[') depth++;
      else if (s[i] === ']' && --depth === 0) {
        const index = new Evaluator(s.slice(this.pos + 1, i), this.vars, this.evaluating).evaluate();
        this.pos = i + 1;
        return `${name}[${index >>> 0}]`;
      }
    }
    return this.fail('missing ]');
  }

  /** The value of an operand: a variable's is read (0 when unset or empty). */
  private value(operand: Operand): number {
    if (operand.name === null) return operand.value;
    return this.variable(operand.name);
  }

  private variable(name: string): number {
    const text = (this.vars.get(name) ?? '').trim();
    if (text === '') return 0;
    const literal = parseNumber(text.replace(/^-/, ''));
    if (literal !== null) return text.startsWith('-') ? -literal | 0 : literal;
    // A value that is not a number is an expression of its own (x=y+1 reads y).
    if (this.evaluating.has(name) || this.evaluating.size >= MAX_DEPTH) {
      this.fail(`expression recurses on parameter '${name}'`);
    }
    this.evaluating.add(name);
    try {
      return new Evaluator(text, this.vars, this.evaluating).evaluate();
    } finally {
      this.evaluating.delete(name);
    }
  }

  private assign(target: Operand, op: string, value: number): number {
    if (target.name === null) this.fail(`${op} requires lvalue`);
    if (this.skipping !== 0) return value;
    if (this.vars.readonly?.(target.name)) this.fail(`${op} applied to read-only variable`);
    this.vars.set(target.name, String(value));
    return value;
  }

  private comma(): Operand {
    let left = this.assignment();
    while (this.isOp(',')) {
      this.value(left);
      this.next();
      left = this.assignment();
    }
    return left;
  }

  private assignment(): Operand {
    const left = this.ternary();
    const op = this.token.kind === 'op' && ASSIGNMENTS.has(this.token.op) ? this.token.op : null;
    if (!op) return left;
    if (left.name === null) this.fail(`${op} requires lvalue`);
    this.next();
    const right = this.value(this.assignment());
    const value = op === '=' ? right : this.binary(op.slice(0, -1), this.variable(left.name), right);
    return { value: this.assign(left, op, value), name: null };
  }

  private ternary(): Operand {
    const condition = this.binaryLevel(0);
    if (!this.isOp('?')) return condition;
    const taken = this.value(condition) !== 0;
    this.next();
    if (!taken) this.skipping++;
    const yes = this.value(this.comma());
    if (!taken) this.skipping--;
    if (!this.isOp(':')) this.fail('missing :');
    this.next();
    if (taken) this.skipping++;
    const no = this.value(this.ternary());
    if (taken) this.skipping--;
    return { value: taken ? yes : no, name: null };
  }

  private binaryLevel(level: number): Operand {
    if (level === BINARY.length) return this.unary();
    let left = this.binaryLevel(level + 1);
    for (let op = this.isOp(...BINARY[level]!); op; op = this.isOp(...BINARY[level]!)) {
      const l = this.value(left);
      this.next();
      if (op === '&&' || op === '||') {
        // The right side is read but has no effect when the left decides.
        const decided = op === '&&' ? l === 0 : l !== 0;
        if (decided) this.skipping++;
        const r = this.value(this.binaryLevel(level + 1));
        if (decided) this.skipping--;
        left = { value: (op === '&&' ? l !== 0 && r !== 0 : l !== 0 || r !== 0) ? 1 : 0, name: null };
        continue;
      }
      const r = this.value(this.binaryLevel(level + 1));
      left = { value: this.binary(op, l, r), name: null };
    }
    return left;
  }

  /** `l op r` on 32-bit integers, as mksh computes it. */
  private binary(op: string, l: number, r: number): number {
    switch (op) {
      case '*':
        return Math.imul(l, r);
      case '/':
      case '%': {
        if (r === 0) {
          if (this.skipping === 0) this.fail('zero divisor');
          return 0;
        }
        // Truncates toward zero; INT_MIN / -1 wraps to INT_MIN.
        const q = Math.trunc(l / r) | 0;
        return op === '/' ? q : (l - Math.imul(q, r)) | 0;
      }
      case '+':
        return (l + r) | 0;
      case '-':
        return (l - r) | 0;
      case '<<':
        return l << (r & 31);
      case '>>':
        return l >> (r & 31);
      case '<':
        return l < r ? 1 : 0;
      case '<=':
        return l <= r ? 1 : 0;
      case '>':
        return l > r ? 1 : 0;
      case '>=':
        return l >= r ? 1 : 0;
      case '==':
        return l === r ? 1 : 0;
      case '!=':
        return l !== r ? 1 : 0;
      case '&':
        return l & r;
      case '^':
        return l ^ r;
      case '|':
        return l | r;
      default:
        return this.fail(`unexpected '${op}'`);
    }
  }

  private unary(): Operand {
    const op = this.isOp('+', '-', '!', '~', '++', '--');
    if (op === '++' || op === '--') {
      this.next();
      const target = this.unary();
      if (target.name === null) this.fail(`${op} requires lvalue`);
      const value = (this.variable(target.name) + (op === '++' ? 1 : -1)) | 0;
      return { value: this.assign(target, op, value), name: null };
    }
    if (op) {
      this.next();
      const v = this.value(this.unary());
      const value = op === '-' ? -v | 0 : op === '!' ? (v === 0 ? 1 : 0) : op === '~' ? ~v : v;
      return { value, name: null };
    }
    return this.postfix();
  }

  private postfix(): Operand {
    const operand = this.primary();
    const op = this.isOp('++', '--');
    if (!op) return operand;
    if (operand.name === null) this.fail(`${op} requires lvalue`);
    this.next();
    const before = this.variable(operand.name);
    this.assign(operand, op, (before + (op === '++' ? 1 : -1)) | 0);
    return { value: before, name: null };
  }

  private primary(): Operand {
    const t = this.token;
    if (t.kind === 'num') {
      this.next();
      return { value: t.value, name: null };
    }
    if (t.kind === 'var') {
      this.next();
      return { value: 0, name: t.name };
    }
    if (this.isOp('(')) {
      this.next();
      const inner = this.value(this.comma());
      if (!this.isOp(')')) this.fail('missing )');
      this.next();
      return { value: inner, name: null };
    }
    return this.unexpected();
  }
}

/**
 * A number as mksh reads one in arithmetic: decimal, 0x hexadecimal, or BASE#DIGITS with a
 * base from 2 to 36 (1#c is the character's code); null when it is not one. Wraps to 32 bits.
 */
function parseNumber(text: string): number | null {
  let base = 10;
  let digits = text;
  const hash = text.indexOf('#');
  if (hash >= 0) {
    const b = text.slice(0, hash);
    digits = text.slice(hash + 1);
    if (!/^[0-9]+$/.test(b)) return null;
    base = Number(b);
    if (base === 1) return digits.length === 1 ? digits.charCodeAt(0) : null;
    if (base < 2 || base > 36) return null;
  } else if (/^0[xX]/.test(text)) {
    base = 16;
    digits = text.slice(2);
  }
  if (digits === '') return null;
  let value = 0;
  for (const c of digits.toLowerCase()) {
    const d = c >= '0' && c <= '9' ? c.charCodeAt(0) - 48 : c >= 'a' && c <= 'z' ? c.charCodeAt(0) - 87 : 99;
    if (d >= base) return null;
    value = (Math.imul(value, base) + d) | 0;
  }
  return value;
}
