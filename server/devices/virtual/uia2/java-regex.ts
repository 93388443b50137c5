/**
 * java.util.regex.Pattern, as Android runs it, translated to a JavaScript RegExp.
 *
 * Both of the UiAutomator2 server's regex users compile their patterns with Android's
 * Pattern: UiSelector's *Matches() methods (`Pattern.compile(regex)`, then
 * `matcher(text).matches()`), and the XPath 2.0 evaluator the server bundles (Eclipse
 * PsychoPath), whose matches(), replace() and tokenize() hand the XPath pattern to
 * `Pattern.compile` (see xpath.ts for what it does to the pattern first).
 *
 * Android's Pattern is ICU's regex engine behind the Java API (libcore's Pattern calls
 * com.android.icu.util.regex.PatternNative), so what is modelled here is ICU's syntax and
 * its Android rules, which differ from the JDK's:
 * - Unicode character classes are always used (Android ignores UNICODE_CHARACTER_CLASS):
 *   `\d` is `\p{Nd}`, `\w` and `\s` are Unicode, and the POSIX names resolve as ICU property
 *   names: `\p{Upper}` is Uppercase, `\p{Punct}` is General_Category=P, `\p{Alnum}` is
 *   Alphabetic or Nd, not the JDK's ASCII sets.
 * - Case-insensitive matching is always Unicode-aware (Android ignores UNICODE_CASE).
 * - An unescaped `{` that does not start an interval, or a lone `}`, is a syntax error.
 * - A look-behind must have a bounded length.
 *
 * The output uses JavaScript's `v` flag, whose classes can nest and intersect as Java's do
 * (`[a-z&&[^aeiou]]`). Anything this translator cannot give exactly the same meaning is
 * refused with JavaRegexUnsupportedError; a pattern Android itself rejects throws
 * JavaRegexSyntaxError with Android's PatternSyntaxException message.
 */

/** Pattern's flags: CASE_INSENSITIVE (i), DOTALL (s), MULTILINE (m), COMMENTS (x), UNIX_LINES (d). */
export interface JavaRegexFlags {
  i?: boolean;
  s?: boolean;
  m?: boolean;
  x?: boolean;
  d?: boolean;
}

/** A pattern Android's Pattern.compile rejects; the message is its PatternSyntaxException's. */
export class JavaRegexSyntaxError extends Error {
  constructor(
    /** ICU's description, as Android words it ("Syntax error", "Incorrectly nested parentheses"). */
    readonly description: string,
    readonly pattern: string,
    readonly index: number,
  ) {
    // PatternSyntaxException.getMessage(): description, index, the pattern and a caret.
    super(`${description} in regexp pattern near index ${index}\n${pattern}\n${' '.repeat(index)}^`);
    this.name = 'PatternSyntaxException';
  }
}

/** A valid pattern that uses something this translator does not model. */
export class JavaRegexUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JavaRegexUnsupportedError';
  }
}

export interface CompiledJavaRegex {
  /** The JavaScript source, to be used with `flags`. */
  source: string;
  /** `v`, plus `i` when the whole pattern is case-insensitive. */
  flags: string;
  /** Java capture group n is JavaScript group groups[n] (atomic groups add groups). */
  groups: number[];
}

// ---- the sets Android's (ICU's) escapes and property names stand for ----

// ICU's \w: [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\u200c\u200d] (regexst.cpp, gIsWordPattern).
const WORD = '[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\u{200c}\\u{200d}]';
// ICU's \s: [\p{WhiteSpace}] (gIsSpacePattern).
const SPACE = '\\p{White_Space}';
// ICU's \h and \v (horizontal and vertical white space).
const HSPACE = '[\\t\\p{Zs}]';
const VSPACE = '[\\n\\u{b}\\f\\r\\u{85}\\u{2028}\\u{2029}]';
// Line terminators outside UNIX_LINES mode: \n, \r (and \r\n), U+0085, U+2028, U+2029.
const LINE_END = '[\\n\\r\\u{85}\\u{2028}\\u{2029}]';

/**
 * Property names as ICU resolves them in `\p{...}`: binary properties by their short or long
 * alias, General_Category values (`Digit` and `Punct` are the value aliases of Nd and P),
 * ICU's POSIX-compatibility properties (alnum, blank, graph, print, xdigit) and ASCII.
 * Keys are loose-matched as ICU does (case, spaces, `_` and `-` ignored).
 */
const NAMED_SETS: Record<string, string> = {
  upper: '\\p{Uppercase}',
  uppercase: '\\p{Uppercase}',
  lower: '\\p{Lowercase}',
  lowercase: '\\p{Lowercase}',
  alpha: '\\p{Alphabetic}',
  alphabetic: '\\p{Alphabetic}',
  digit: '\\p{Nd}',
  alnum: '[\\p{Alphabetic}\\p{Nd}]',
  punct: '\\p{P}',
  space: SPACE,
  whitespace: SPACE,
  wspace: SPACE,
  blank: HSPACE,
  cntrl: '\\p{Cc}',
  xdigit: '[\\p{Nd}\\p{Hex_Digit}]',
  // ICU: graph is everything but white space, Cc, Cs and Cn; print is graph and blank, less Cc.
  graph: '[^\\p{White_Space}\\p{Cc}\\p{Cs}\\p{Cn}]',
  print: '[[[^\\p{White_Space}\\p{Cc}\\p{Cs}\\p{Cn}]\\t\\p{Zs}]--\\p{Cc}]',
  ascii: '\\p{ASCII}',
  any: '\\p{Any}',
};

const GENERAL_CATEGORIES = new Set(
  (
    'L LC Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So ' +
    'Z Zs Zl Zp C Cc Cf Cs Co Cn'
  ).split(' '),
);

const loose = (name: string) => name.replace(/[\s_-]/g, '').toLowerCase();

/** The JavaScript set for `\p{name}`, or an error naming what is not modelled. */
function propertySet(name: string, pattern: string, at: number): string {
  let n = name.trim();
  const eq = n.indexOf('=');
  if (eq >= 0) {
    const key = loose(n.slice(0, eq));
    const value = n.slice(eq + 1).trim();
    if ((key === 'gc' || key === 'generalcategory') && GENERAL_CATEGORIES.has(value)) return `\\p{${value}}`;
    if (key === 'sc' || key === 'script') return scriptSet(value, name);
    throw new JavaRegexUnsupportedError(`the property \\p{${name}} is not modelled by the virtual phone`);
  }
  // Java's "In" prefix names a block, which JavaScript cannot test; "Is" is dropped (ICU).
  if (/^In[A-Z]/.test(n)) throw new JavaRegexUnsupportedError(`the block \\p{${name}} is not modelled`);
  if (/^Is./.test(n)) n = n.slice(2);
  if (n.startsWith('java'))
    throw new JavaRegexUnsupportedError(
      `the Java property \\p{${name}} is not modelled by the virtual phone`,
    );
  if (GENERAL_CATEGORIES.has(n)) return `\\p{${n}}`;
  const set = NAMED_SETS[loose(n)];
  if (set) return set;
  if (!n) throw new JavaRegexSyntaxError('Property syntax error', pattern, at);
  // ICU also takes a bare script name (\p{Latin}).
  return scriptSet(n, name);
}

function scriptSet(script: string, name: string): string {
  const set = `\\p{sc=${script}}`;
  try {
    new RegExp(set, 'v');
  } catch {
    throw new JavaRegexUnsupportedError(`the property \\p{${name}} is not modelled by the virtual phone`);
  }
  return set;
}

/** A code point as a JavaScript escape that means the same inside and outside classes. */
const literal = (cp: number): string =>
  /[A-Za-z0-9]/.test(String.fromCodePoint(cp)) ? String.fromCodePoint(cp) : `\\u{${cp.toString(16)}}`;

// ---- the translator ----

interface Flags {
  i: boolean;
  s: boolean;
  m: boolean;
  x: boolean;
  d: boolean;
}

// Group numbers are settled after translation, because an atomic group's helper group opens
// before the groups inside it: while translating, a group's opening carries a marker
// (J<java number> or A<helper number> between two U+E000s) and a back-reference names the
// group it means (R<java number> or a<helper number>, likewise). Literals never contain
// U+E000: every non-alphanumeric literal is written as an escape.
const MARK = '\ue000';

class Translator {
  private i = 0;
  private javaGroups = 0;
  private helpers = 0;
  private readonly backrefs: { n: number; at: number }[] = [];
  private lookbehind = 0;
  /** Whether the whole pattern is case-insensitive (JavaScript's `i` flag). */
  private globalI: boolean | null = null;

  constructor(
    private readonly src: string,
    private flags: Flags,
  ) {}

  translate(): CompiledJavaRegex {
    // Flags set at the very start of the pattern, `(?i)`, hold for all of it.
    while (this.src.startsWith('(?', this.i) && /^\(\?[A-Za-z-]+\)/.test(this.src.slice(this.i))) {
      const end = this.src.indexOf(')', this.i);
      this.setFlags(this.src.slice(this.i + 2, end), this.i);
      this.i = end + 1;
    }
    this.globalI = this.flags.i;
    const body = this.alternation();
    if (this.i < this.src.length) throw this.syntax('Incorrectly nested parentheses');
    for (const r of this.backrefs)
      if (r.n > this.javaGroups)
        throw new JavaRegexSyntaxError('Back-reference to a non-existent group', this.src, r.at);
    // Number the groups in the order they open, then resolve the back-references.
    const java: number[] = [0];
    const helper: number[] = [0];
    let count = 0;
    for (const m of body.matchAll(/\ue000([JA])(\d+)\ue000/g))
      (m[1] === 'J' ? java : helper)[Number(m[2])] = ++count;
    const source = body
      .replace(/\ue000([Ra])(\d+)\ue000/g, (_, kind: string, n: string) =>
        String((kind === 'R' ? java : helper)[Number(n)]),
      )
      .replace(/\ue000[JA]\d+\ue000/g, '');
    return { source, flags: this.globalI ? 'vi' : 'v', groups: java };
  }

  private syntax(description = 'Syntax error', at = this.i): JavaRegexSyntaxError {
    return new JavaRegexSyntaxError(description, this.src, at);
  }

  private peek(offset = 0): string {
    return this.src[this.i + offset] ?? '';
  }

  /**
   * `i` may only hold for the whole pattern: JavaScript (in Node 20) cannot scope it. A
   * literal without case (`cp`) is the same either way.
   */
  private checkCase(cp?: number): void {
    if (cp !== undefined) {
      const ch = String.fromCodePoint(cp);
      if (ch.toLowerCase() === ch && ch.toUpperCase() === ch) return;
    }
    if (this.flags.i !== this.globalI)
      throw new JavaRegexUnsupportedError(
        'a case-insensitive flag for part of a pattern ((?i) after the start, (?i:...), (?-i)) ' +
          'is not modelled by the virtual phone; put (?i) at the start of the pattern',
      );
  }

  private setFlags(spec: string, at: number): void {
    let on = true;
    for (const c of spec) {
      if (c === '-') on = false;
      else if (c === 'i' || c === 's' || c === 'm' || c === 'x') this.flags[c] = on;
      // (?u) is ignored on Android: case folding is always Unicode.
      else if (c === 'u') continue;
      else if (c === 'd' || c === 'U' || c === 'w')
        throw new JavaRegexUnsupportedError(`the embedded flag (?${c}) is not modelled by the virtual phone`);
      else throw new JavaRegexSyntaxError('Invalid value for match mode flags', this.src, at);
    }
  }

  /** In COMMENTS mode whitespace and `#` comments between tokens are ignored. */
  private skipComments(): void {
    if (!this.flags.x) return;
    for (;;) {
      const c = this.peek();
      if (/\s/.test(c)) this.i++;
      else if (c === '#') {
        while (this.i < this.src.length && this.peek() !== '\n') this.i++;
      } else return;
    }
  }

  private alternation(): string {
    const branches = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      branches.push(this.sequence());
    }
    return branches.join('|');
  }

  private sequence(): string {
    let out = '';
    for (;;) {
      this.skipComments();
      const c = this.peek();
      if (c === '' || c === '|' || c === ')') return out;
      const start = this.i;
      const atom = this.atom();
      if (atom === null) continue; // a flag group or a comment: nothing to match
      out += this.quantified(atom, start);
    }
  }

  /** One atom; null for constructs that match nothing (flag groups, comments). */
  private atom(): string | null {
    const c = this.peek();
    const at = this.i;
    switch (c) {
      case '(':
        return this.group();
      case '[':
        this.checkCase();
        return this.charClass();
      case '.':
        this.i++;
        // DOTALL: anything; UNIX_LINES: all but \n; otherwise all but the line terminators.
        return this.flags.s ? '[\\s\\S]' : this.flags.d ? '[^\\n]' : `[^${LINE_END.slice(1, -1)}]`;
      case '^':
        this.i++;
        // MULTILINE `^` matches at the start and after a line terminator, not at the very end
        // of the input (and not between \r and \n).
        if (!this.flags.m) return '^';
        return this.flags.d
          ? '(?:^|(?<=\\n)(?=[\\s\\S]))'
          : '(?:^|(?<=[\\n\\u{85}\\u{2028}\\u{2029}])(?=[\\s\\S])|(?<=\\r)(?=[^\\n]))';
      case '$':
        this.i++;
        return this.dollar();
      case '\\':
        return this.escape();
      case '*':
      case '+':
      case '?':
        throw this.syntax();
      case '{':
      case '}':
        // ICU: a brace that does not make an interval is a syntax error, not a literal.
        throw this.syntax('Syntax error', at);
      default: {
        const cp = this.src.codePointAt(this.i) ?? 0;
        this.checkCase(cp);
        this.i += cp > 0xffff ? 2 : 1;
        return literal(cp);
      }
    }
  }

  /**
   * `$`: without MULTILINE, the end of the input or before a line terminator that ends it;
   * with MULTILINE, before any line terminator (never between \r and \n) or at the end.
   */
  private dollar(): string {
    const end = '(?![\\s\\S])';
    if (this.flags.d) return this.flags.m ? `(?=\\n|${end})` : `(?=\\n?${end})`;
    if (this.flags.m) return `(?:(?=\\r|${end})|(?<!\\r)(?=[\\n\\u{85}\\u{2028}\\u{2029}]))`;
    return `(?:(?=\\r\\n?${end})|(?<!\\r)(?=[\\n\\u{85}\\u{2028}\\u{2029}]?${end}))`;
  }

  private group(): string | null {
    const at = this.i;
    this.i++; // (
    let open = '(';
    let atomic = false;
    let lookbehind = false;
    const saved = { ...this.flags };
    if (this.peek() === '?') {
      this.i++;
      const rest = this.src.slice(this.i);
      const name = /^<([A-Za-z][A-Za-z0-9]*)>/.exec(rest);
      if (rest.startsWith(':')) open = '(?:';
      else if (rest.startsWith('=') || rest.startsWith('!')) open = `(?${rest[0]}`;
      else if (rest.startsWith('<=') || rest.startsWith('<!')) {
        open = `(?${rest.slice(0, 2)}`;
        lookbehind = true;
        this.i++;
      } else if (name) {
        open = `(?<${name[1]}>${MARK}J${++this.javaGroups}${MARK}`;
        this.i += name[0].length - 1;
      } else if (rest.startsWith('>')) {
        open = '(?:';
        atomic = true;
      } else if (rest.startsWith('#')) {
        // (?#comment)
        const end = this.src.indexOf(')', this.i);
        if (end < 0) throw this.syntax('Incorrectly nested parentheses', this.src.length);
        this.i = end + 1;
        return null;
      } else {
        const flags = /^([A-Za-z-]*)([:)])/.exec(rest);
        if (!flags) throw this.syntax('Syntax error', this.i);
        this.setFlags(flags[1] ?? '', at);
        this.i += flags[0].length;
        // (?i) alone changes the flags until the end of the enclosing group.
        if (flags[2] === ')') return null;
        const body = this.alternation();
        this.closeGroup(at);
        this.flags = saved;
        return `(?:${body})`;
      }
      this.i++;
    } else open = `(${MARK}J${++this.javaGroups}${MARK}`;
    if (lookbehind) this.lookbehind++;
    const body = this.alternation();
    if (lookbehind) this.lookbehind--;
    this.closeGroup(at);
    this.flags = saved;
    return atomic ? this.atomic(body) : `${open}${body})`;
  }

  private closeGroup(at: number): void {
    if (this.peek() !== ')') throw new JavaRegexSyntaxError('Incorrectly nested parentheses', this.src, at);
    this.i++;
  }

  /**
   * An atomic group `(?>X)` (and a possessive quantifier, `X*+` being `(?>X*)`), which
   * JavaScript lacks: a look-ahead captures what X matches and a back-reference consumes
   * exactly that, so nothing inside is tried again. The helper group shifts the numbers of
   * the groups after it; `groups` maps Java's numbers to JavaScript's.
   */
  private atomic(body: string): string {
    const n = ++this.helpers;
    return `(?:(?=(${MARK}A${n}${MARK}${body}))(?:\\${MARK}a${n}${MARK}))`;
  }

  private quantified(atom: string, start: number): string {
    const q = this.quantifier();
    if (!q) return atom;
    if (this.lookbehind > 0 && q.unbounded)
      throw new JavaRegexSyntaxError(
        'Look-behind pattern matches must have a bounded maximum length',
        this.src,
        start,
      );
    const next = this.peek();
    if (next === '?') {
      this.i++;
      return `${atom}${q.text}?`;
    }
    if (next === '+') {
      this.i++;
      return this.atomic(`${atom}${q.text}`);
    }
    if (next === '*' || next === '{') throw this.syntax();
    return `${atom}${q.text}`;
  }

  private quantifier(): { text: string; unbounded: boolean } | null {
    this.skipComments();
    const c = this.peek();
    if (c === '*' || c === '+') {
      this.i++;
      return { text: c, unbounded: true };
    }
    if (c === '?') {
      this.i++;
      return { text: c, unbounded: false };
    }
    if (c !== '{') return null;
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
    if (!m) throw new JavaRegexSyntaxError('Error in {min,max} interval', this.src, this.i);
    const min = Number(m[1]);
    const max = m[3] ? Number(m[3]) : null;
    if (max !== null && max < min)
      throw new JavaRegexSyntaxError('min > max in {min,max} interval', this.src, this.i);
    this.i += m[0].length;
    return { text: m[0], unbounded: m[2] !== undefined && max === null };
  }

  /** A backslash escape outside a class. */
  private escape(): string {
    const at = this.i;
    const c = this.peek(1);
    if (c === '') throw this.syntax('Syntax error', this.src.length);
    switch (c) {
      case 'Q': {
        // \Q...\E quotes everything between (to the end of the pattern without \E).
        this.checkCase();
        const end = this.src.indexOf('\\E', this.i + 2);
        const text = this.src.slice(this.i + 2, end < 0 ? undefined : end);
        this.i = end < 0 ? this.src.length : end + 2;
        return `(?:${[...text].map((ch) => literal(ch.codePointAt(0) ?? 0)).join('')})`;
      }
      case 'E':
        // A stray \E is ignored.
        this.i += 2;
        return '';
      case 'A':
        this.i += 2;
        return '^';
      case 'z':
        this.i += 2;
        return '(?![\\s\\S])';
      case 'Z':
        this.i += 2;
        return this.flags.d
          ? '(?=\\n?(?![\\s\\S]))'
          : '(?:(?=\\r\\n?(?![\\s\\S]))|(?<!\\r)(?=[\\n\\u{85}\\u{2028}\\u{2029}]?(?![\\s\\S])))';
      case 'b':
      case 'B': {
        this.i += 2;
        // ICU's \b is a change between \w and \W characters (with \w as ICU defines it).
        const boundary = `(?:(?<=${WORD})(?!${WORD})|(?<!${WORD})(?=${WORD}))`;
        return c === 'b' ? boundary : `(?!${boundary})`;
      }
      case 'R':
        this.i += 2;
        return `(?:\\r\\n|${VSPACE})`;
      case 'G':
      case 'X':
        throw new JavaRegexUnsupportedError(`\\${c} is not modelled by the virtual phone`);
      case 'k': {
        const m = /^\\k<([A-Za-z][A-Za-z0-9]*)>/.exec(this.src.slice(this.i));
        if (!m) throw this.syntax('Bad escape sequence', at);
        this.checkCase();
        this.i += m[0].length;
        return `\\k<${m[1]}>`;
      }
    }
    if (/[1-9]/.test(c)) {
      // A back-reference: Java reads more digits while they still name an existing group.
      this.checkCase();
      let n = Number(c);
      this.i += 2;
      while (/[0-9]/.test(this.peek()) && n * 10 + Number(this.peek()) <= this.javaGroups) {
        n = n * 10 + Number(this.peek());
        this.i++;
      }
      this.backrefs.push({ n, at });
      // In a group of its own, so that a digit after it is not read as part of the number.
      return `(?:\\${MARK}R${n}${MARK})`;
    }
    const set = this.classEscape();
    if (set !== null) return set;
    this.checkCase();
    return literal(this.charEscape());
  }

  /** \d \w \s \h \v \p{..} and their negations as a set usable in and out of classes, or null. */
  private classEscape(): string | null {
    const c = this.peek(1);
    // A `v`-flag class nests, so a negated set is the set inside [^...].
    const wrap = (s: string, negate: boolean): string => (negate ? `[^${s}]` : s);
    const simple: Record<string, string> = { d: '\\p{Nd}', w: WORD, s: SPACE, h: HSPACE, v: VSPACE };
    const lower = c.toLowerCase();
    const base = simple[lower];
    if (base !== undefined && (c === lower || 'DWSHV'.includes(c))) {
      this.i += 2;
      return wrap(base, c !== lower);
    }
    if (c === 'p' || c === 'P') {
      const at = this.i;
      let name: string;
      if (this.peek(2) === '{') {
        const end = this.src.indexOf('}', this.i + 3);
        if (end < 0) throw new JavaRegexSyntaxError('Property syntax error', this.src, at);
        name = this.src.slice(this.i + 3, end);
        this.i = end + 1;
      } else {
        name = this.peek(2);
        if (!name) throw new JavaRegexSyntaxError('Property syntax error', this.src, at);
        this.i += 3;
      }
      let negate = c === 'P';
      if (name.startsWith('^')) {
        negate = !negate;
        name = name.slice(1);
      }
      return wrap(propertySet(name, this.src, at), negate);
    }
    return null;
  }

  /** A single-character escape (\t, \x41, \u0041, \0101, \cA, \.), as a code point. */
  private charEscape(): number {
    const at = this.i;
    const c = this.peek(1);
    const rest = this.src.slice(this.i + 2);
    const simple: Record<string, number> = { t: 9, n: 10, r: 13, f: 12, a: 7, e: 27 };
    const code = simple[c];
    if (code !== undefined) {
      this.i += 2;
      return code;
    }
    let m: RegExpExecArray | null;
    if (c === 'x' && (m = /^\{([0-9a-fA-F]{1,6})\}/.exec(rest))) {
      this.i += 2 + m[0].length;
      const cp = parseInt(m[1] ?? '', 16);
      if (cp > 0x10ffff) throw this.syntax('Bad escape sequence', at);
      return cp;
    }
    if (c === 'x' && (m = /^[0-9a-fA-F]{2}/.exec(rest))) {
      this.i += 4;
      return parseInt(m[0], 16);
    }
    if (c === 'u' && (m = /^[0-9a-fA-F]{4}/.exec(rest))) {
      this.i += 6;
      return parseInt(m[0], 16);
    }
    if (c === '0' && (m = /^[0-3]?[0-7]{1,2}/.exec(rest))) {
      this.i += 2 + m[0].length;
      return parseInt(m[0], 8);
    }
    if (c === 'c' && rest) {
      this.i += 3;
      return (rest.codePointAt(0) ?? 0) ^ 64;
    }
    // Any other letter or digit after a backslash is an error; anything else is itself.
    if (/[A-Za-z0-9]/.test(c)) throw this.syntax('Bad escape sequence', at);
    const cp = this.src.codePointAt(this.i + 1) ?? 0;
    this.i += cp > 0xffff ? 3 : 2;
    return cp;
  }

  /**
   * A bracket expression: single characters, ranges, escapes, nested classes (a union) and
   * `&&` (an intersection, with the lowest precedence, as in Java and ICU), as a `v`-flag
   * class. Java's rules for `^` together with `&&` differ between versions, so that mix is
   * refused.
   */
  private charClass(): string {
    const open = this.i;
    this.i++; // [
    let negate = false;
    if (this.peek() === '^') {
      negate = true;
      this.i++;
    }
    if (this.peek() === ']')
      throw new JavaRegexUnsupportedError(
        "a ']' first in a character class is not modelled; escape it as \\]",
      );
    const operands: string[][] = [[]];
    for (;;) {
      const c = this.peek();
      if (c === '')
        throw new JavaRegexSyntaxError('Missing closing bracket on a bracket expression', this.src, open);
      if (c === ']') {
        this.i++;
        break;
      }
      if (this.flags.x && /\s/.test(c))
        throw new JavaRegexUnsupportedError(
          'white space inside a character class in COMMENTS mode is not modelled',
        );
      const items = operands[operands.length - 1] ?? [];
      if (c === '&' && this.peek(1) === '&') {
        this.i += 2;
        operands.push([]);
        continue;
      }
      if (c === '[') {
        if (this.peek(1) === ':')
          throw new JavaRegexUnsupportedError('POSIX [:name:] classes are not modelled; use \\p{Name}');
        items.push(this.charClass());
        continue;
      }
      if (c === '-' && this.peek(1) === '-' && this.peek(2) === '[')
        throw new JavaRegexUnsupportedError("ICU's -- set difference is not modelled; use &&[^...]");
      if (c === '\\') {
        if (this.peek(1) === 'Q')
          throw new JavaRegexUnsupportedError('\\Q...\\E inside a character class is not modelled');
        const set = this.classEscape();
        if (set !== null) {
          if (this.peek() === '-' && this.peek(1) !== ']')
            throw new JavaRegexUnsupportedError('a range from a class escape (like [\\w-x]) is not modelled');
          items.push(set);
          continue;
        }
      }
      const from = this.classChar();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== '') {
        this.i++;
        if (this.peek() === '[' || (this.peek() === '\\' && /[dDwWsShHvVpP]/.test(this.peek(1))))
          throw new JavaRegexUnsupportedError('a range to a class (like [a-\\d]) is not modelled');
        const at = this.i;
        const to = this.classChar();
        if (to < from)
          throw new JavaRegexSyntaxError('In a character range [x-y], x is greater than y', this.src, at);
        items.push(`${literal(from)}-${literal(to)}`);
      } else items.push(literal(from));
    }
    if (negate && operands.length > 1)
      throw new JavaRegexUnsupportedError("'^' together with '&&' in one character class is not modelled");
    if (operands.some((o) => o.length === 0))
      throw new JavaRegexUnsupportedError("an empty side of '&&' in a character class is not modelled");
    const union = (items: string[]) => `[${items.join('')}]`;
    const body = operands.length > 1 ? operands.map(union).join('&&') : (operands[0] ?? []).join('');
    return `[${negate ? '^' : ''}${body}]`;
  }

  /** One character inside a class, literal or escaped. */
  private classChar(): number {
    if (this.peek() === '\\') return this.charEscape();
    const cp = this.src.codePointAt(this.i) ?? 0;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }
}

/**
 * Translates a Pattern (as Android compiles it) into JavaScript source and flags.
 * Throws JavaRegexSyntaxError where Android's Pattern.compile would throw, and
 * JavaRegexUnsupportedError for what is not modelled.
 */
export function translateJavaRegex(pattern: string, flags: JavaRegexFlags = {}): CompiledJavaRegex {
  const t = new Translator(pattern, {
    i: !!flags.i,
    s: !!flags.s,
    m: !!flags.m,
    x: !!flags.x,
    d: !!flags.d,
  });
  const out = t.translate();
  try {
    new RegExp(out.source, out.flags);
  } catch (err) {
    // A translation JavaScript refuses is this translator's gap, not the user's error.
    throw new JavaRegexUnsupportedError(`the pattern cannot be modelled: ${String(err)}`);
  }
  return out;
}

/**
 * Pattern.compile(regex).matcher(input).matches(): the whole input must match (UiSelector's
 * textMatches() and the other *Matches() methods match this way).
 */
export function javaFullMatcher(pattern: string, flags: JavaRegexFlags = {}): (input: string) => boolean {
  const { source, flags: f } = translateJavaRegex(pattern, flags);
  const re = new RegExp(`^(?:${source})(?![\\s\\S])`, f);
  return (input) => re.test(input);
}
