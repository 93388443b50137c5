/**
 * A POSIX-ish sh parser, enough for what adb clients send: quoting (single, double,
 * backslash), `;` `&` `&&` `||` `|`, redirections, `$VAR` / `${VAR:-x}` / `$(...)` /
 * backticks, `( )` and `{ }` groups, if/while/until/for.
 */

export type WordPart =
  | { type: 'lit'; text: string; quoted: boolean }
  | {
      type: 'param';
      name: string;
      op: ParamOp;
      arg: Word | null;
      /** The replacement of `${X/pat/rep}`, the length of `${X:off:len}`; null without one. */
      second?: Word | null;
      /** An array's subscript: `${a[i]}` (arithmetic), or every element, `${a[@]}` / `${a[*]}`. */
      index?: Word | '@' | '*';
      quoted: boolean;
    }
  | { type: 'cmdsub'; source: string; quoted: boolean }
  /** `$((...))`: its text, expanded (parameters, command substitutions) before it is evaluated. */
  | { type: 'arith'; expression: Word; quoted: boolean };

/**
 * What `${NAME OP ARG}` does: defaults (:- - := = :+ +), errors (:? ?), pattern removal
 * (% %% # ##), pattern substitution (/ // /# /%), a substring (`:`, `${X:off:len}`),
 * `length` for `${#NAME}` (`${#a[@]}`: how many elements), or `keys` for an array's
 * indices, `${!a[@]}`.
 */
export type ParamOp =
  | ''
  | ':-'
  | '-'
  | ':='
  | '='
  | ':+'
  | '+'
  | ':?'
  | '?'
  | '%'
  | '%%'
  | '#'
  | '##'
  | '/'
  | '//'
  | '/#'
  | '/%'
  | ':'
  | 'length'
  | 'keys';

export interface Word {
  parts: WordPart[];
}

/** `<<` is a here-document (its target is the body) and `<<<` a here-string (the word and a newline). */
export type RedirectOp = '>' | '>>' | '<' | '>&' | '<&' | '&>' | '>|' | '<<' | '<<<';

export interface Redirect {
  fd: number;
  op: RedirectOp;
  target: Word;
}

export interface Assignment {
  name: string;
  value: Word;
  /** `NAME+=value`: appended to what NAME holds. */
  append?: boolean;
  /** `NAME[i]=value`: the element's subscript (arithmetic). */
  index?: Word;
  /** `NAME=(a b c)`: the array's new elements, expanded as arguments are (value is empty). */
  elements?: Word[];
}

/**
 * A `case` clause; `then` is how it ends: `;;` (the case is done), `;&` (the next clause's
 * body runs too) or `;|` (the next clauses' patterns are tried), as in mksh.
 */
export interface CaseClause {
  patterns: Word[];
  body: List;
  then: ';;' | ';&' | ';|';
}

export type Command =
  | { type: 'simple'; assigns: Assignment[]; words: Word[]; redirects: Redirect[] }
  | { type: 'subshell'; body: List; redirects: Redirect[] }
  | { type: 'group'; body: List; redirects: Redirect[] }
  | { type: 'if'; clauses: { cond: List; body: List }[]; otherwise: List | null; redirects: Redirect[] }
  | { type: 'while' | 'until'; cond: List; body: List; redirects: Redirect[] }
  | { type: 'for'; name: string; items: Word[] | null; body: List; redirects: Redirect[] }
  | { type: 'function'; name: string; body: Command; redirects: Redirect[] }
  | { type: 'case'; word: Word; clauses: CaseClause[]; redirects: Redirect[] }
  | { type: 'cond'; expr: CondExpr; redirects: Redirect[] }
  /** `(( expression ))`: true (0) when the expression is not zero, as `let`. */
  | { type: 'arith'; expression: Word; redirects: Redirect[] };

/**
 * A `[[ ... ]]` expression: `&&`, `||`, `!` and parentheses over primaries: a unary test
 * (`-f FILE`, `-n STR`, ...), a binary one (`A == PATTERN`, `A < B`, `N -lt M`, `F -nt G`) or
 * a word (true when not empty). Its words are expanded without splitting or globbing.
 */
export type CondExpr =
  | { kind: 'and' | 'or'; left: CondExpr; right: CondExpr }
  | { kind: 'not'; expr: CondExpr }
  | { kind: 'unary'; op: string; operand: Word }
  | { kind: 'binary'; op: string; left: Word; right: Word }
  | { kind: 'string'; word: Word };

/** The unary tests of `[[ ]]`, as mksh has them. */
const COND_UNARY = new Set('-a -b -c -d -e -f -g -G -h -k -L -n -O -o -p -r -s -S -t -u -w -x -z'.split(' '));
/** The binary tests of `[[ ]]` (`<` and `>` come from the lexer as operators). */
const COND_BINARY = new Set('= == != -eq -ne -lt -le -gt -ge -nt -ot -ef'.split(' '));

type CondItem = { op: string } | { word: Word; raw: string; plain: boolean };

/** Parses the items between `[[` and `]]`. */
function parseCond(items: CondItem[]): CondExpr {
  let i = 0;
  const isOp = (item: CondItem | undefined, op: string) =>
    item !== undefined && 'op' in item && item.op === op;
  const raw = (item: CondItem | undefined) => (item && 'word' in item && item.plain ? item.raw : null);
  const unexpected = (): never => {
    const item = items[i];
    const what = item === undefined ? ']]' : 'op' in item ? item.op : item.raw;
    throw new ShellSyntaxError(`syntax error: '${what}' unexpected operator/operand`);
  };
  const word = (): Word => {
    const item = items[i];
    if (item === undefined || !('word' in item)) return unexpected();
    i++;
    return item.word;
  };
  const primary = (): CondExpr => {
    const item = items[i];
    if (isOp(item, '(')) {
      i++;
      const inner = or();
      if (!isOp(items[i], ')')) unexpected();
      i++;
      return inner;
    }
    if (raw(item) === '!') {
      i++;
      return { kind: 'not', expr: primary() };
    }
    const first = raw(item);
    const next = items[i + 1];
    const binaryNext =
      (next && 'op' in next && (next.op === '<' || next.op === '>')) || COND_BINARY.has(raw(next) ?? '');
    if (first !== null && COND_UNARY.has(first) && next && 'word' in next && !binaryNext) {
      i++;
      return { kind: 'unary', op: first, operand: word() };
    }
    const left = word();
    const op = items[i];
    if (op && 'op' in op && (op.op === '<' || op.op === '>')) {
      i++;
      return { kind: 'binary', op: op.op, left, right: word() };
    }
    const opRaw = raw(op);
    if (opRaw !== null && COND_BINARY.has(opRaw)) {
      i++;
      return { kind: 'binary', op: opRaw, left, right: word() };
    }
    if (opRaw === '=~') unexpected();
    return { kind: 'string', word: left };
  };
  /** Operands read by `next`, joined left to right by `op`. */
  const joined = (op: '&&' | '||', next: () => CondExpr) => (): CondExpr => {
    let left = next();
    while (isOp(items[i], op)) {
      i++;
      left = { kind: op === '&&' ? 'and' : 'or', left, right: next() };
    }
    return left;
  };
  const and = joined('&&', primary);
  const or = joined('||', and);
  const expr = or();
  if (i < items.length) unexpected();
  return expr;
}

export interface Pipeline {
  negate: boolean;
  commands: Command[];
}

export interface AndOr {
  first: Pipeline;
  rest: { op: '&&' | '||'; pipeline: Pipeline }[];
  /** The list's source text, as `jobs` shows a background job. */
  text: string;
}

export interface ListItem {
  andOr: AndOr;
  background: boolean;
}

export type List = ListItem[];

/** The line that ends a here-document: its delimiter (after leading tabs, for `<<-`). */
export interface HeredocEnd {
  delimiter: string;
  stripTabs: boolean;
}

export class ShellSyntaxError extends Error {
  /** The source ended before what it began (a quote, a here-document, an `if`) was closed. */
  incomplete = false;
  /** The source ended inside a here-document's body: only this line can end it. */
  heredoc: HeredocEnd | null = null;
  constructor(message: string) {
    super(message);
    this.name = 'ShellSyntaxError';
  }

  /** The source ended inside something it opened: further lines would complete it. */
  static atEnd(message: string): ShellSyntaxError {
    const error = new ShellSyntaxError(message);
    error.incomplete = true;
    return error;
  }
}

type Token =
  | { type: 'word'; word: Word; raw: string; plain: boolean }
  | { type: 'op'; op: string }
  | { type: 'ionum'; fd: number }
  | { type: 'newline' }
  | { type: 'eof' };

const OPERATORS = [
  '<<<',
  '<<-',
  '&&',
  '||',
  ';;',
  ';&',
  ';|',
  '>>',
  '>&',
  '<&',
  '&>',
  '>|',
  '<<',
  ';',
  '&',
  '|',
  '(',
  ')',
  '<',
  '>',
];

/** A here-document whose body is read at the end of its line. */
interface PendingHeredoc {
  delimiter: string;
  /** `<<-`: leading tabs are removed from the body's lines and the delimiter's. */
  stripTabs: boolean;
  /** The delimiter was quoted: the body is taken as it is, without expansions. */
  quoted: boolean;
  redirect: Redirect;
}

function isNameStart(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z_]/.test(c);
}
function isNameChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

/** A name a function may have (mksh allows a few punctuation characters too). */
function isFunctionName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name) && !RESERVED.has(name);
}

const RESERVED = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'for',
  'in',
  'case',
  'esac',
  'function',
  '{',
  '}',
  '!',
]);

class Lexer {
  pos = 0;
  /** Where the token `next()` returned last begins (after blanks and comments). */
  tokenStart = 0;
  /** Here-documents of the current line: their bodies follow its newline. */
  readonly heredocs: PendingHeredoc[] = [];
  constructor(readonly src: string) {}

  next(): Token {
    const s = this.src;
    // skip blanks and comments
    for (;;) {
      const c = s[this.pos];
      if (c === ' ' || c === '\t' || c === '\r') this.pos++;
      else if (c === '\\' && s[this.pos + 1] === '\n') this.pos += 2;
      else if (c === '#') {
        while (this.pos < s.length && s[this.pos] !== '\n') this.pos++;
      } else break;
    }
    this.tokenStart = this.pos;
    if (this.pos >= s.length) {
      const unread = this.heredocs[0];
      if (unread) throw unclosedHeredoc(unread);
      return { type: 'eof' };
    }
    const c = s[this.pos]!;
    if (c === '\n') {
      this.pos++;
      this.readHeredocBodies();
      return { type: 'newline' };
    }
    // IO number: a digit directly followed by < or > (mksh's descriptors are 0 to 9: `10>f` is a word)
    const io = /^(\d)(?=[<>])/.exec(s.slice(this.pos, this.pos + 2));
    if (io) {
      this.pos += io[1]!.length;
      return { type: 'ionum', fd: Number(io[1]) };
    }
    for (const op of OPERATORS) {
      if (s.startsWith(op, this.pos)) {
        this.pos += op.length;
        return { type: 'op', op };
      }
    }
    return this.word();
  }

  /** Reads the bodies of the line's here-documents, each up to its delimiter's line. */
  private readHeredocBodies(): void {
    const s = this.src;
    for (const doc of this.heredocs.splice(0)) {
      let body = '';
      for (;;) {
        if (this.pos >= s.length) throw unclosedHeredoc(doc);
        const end = s.indexOf('\n', this.pos);
        let line = s.slice(this.pos, end < 0 ? s.length : end);
        this.pos = end < 0 ? s.length : end + 1;
        if (doc.stripTabs) line = line.replace(/^\t+/, '');
        if (line === doc.delimiter) break;
        body += `${line}\n`;
      }
      doc.redirect.target = doc.quoted
        ? { parts: [{ type: 'lit', text: body, quoted: true }] }
        : new Lexer(body).hereDocumentWord();
    }
  }

  /**
   * This lexer's whole source as an unquoted here-document's body: `$` expansions and
   * backticks, a backslash quoting only `$`, `` ` ``, `\` and a newline; no splitting.
   * `doubleQuoted`: the word of `"${x:-word}"`, where `"` groups and `\"` is a quote.
   */
  hereDocumentWord(options: { doubleQuoted?: boolean } = {}): Word {
    const s = this.src;
    const parts: WordPart[] = [];
    const lit = (text: string) => {
      const last = parts[parts.length - 1];
      if (last && last.type === 'lit') last.text += text;
      else parts.push({ type: 'lit', text, quoted: true });
    };
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (c === '\\' && this.pos + 1 < s.length && '$`\\\n"'.includes(s[this.pos + 1]!)) {
        if (s[this.pos + 1] === '"' && !options.doubleQuoted) lit('\\');
        if (s[this.pos + 1] !== '\n') lit(s[this.pos + 1]!);
        this.pos += 2;
      } else if (c === '"' && options.doubleQuoted) {
        // Inside "${x:-...}", double quotes group (and go); single quotes are characters.
        this.pos++;
      } else if (c === '$' || c === '`') {
        const part = this.dollar(true);
        if (part) parts.push(part);
        else {
          lit(c);
          this.pos++;
        }
      } else {
        lit(c);
        this.pos++;
      }
    }
    return { parts };
  }

  /** A word up to the first of `delimiters` outside quotes (blanks and operators by default). */
  private word(delimiters = ' \t\r\n;&|()<>'): Token {
    const s = this.src;
    const start = this.pos;
    const parts: WordPart[] = [];
    let plain = true;
    const lit = (text: string, quoted: boolean) => {
      const last = parts[parts.length - 1];
      if (last && last.type === 'lit' && last.quoted === quoted) last.text += text;
      else parts.push({ type: 'lit', text, quoted });
    };
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (delimiters.includes(c)) break;
      if (c === '~') {
        // ~ at a word's start (or an assignment's value's): $HOME (~+ $PWD, ~- $OLDPWD), never split.
        const tilde = this.tildePrefix(start);
        if (tilde) {
          plain = false;
          parts.push({ type: 'param', name: tilde.name, op: '', arg: null, quoted: true });
          this.pos += tilde.length;
          continue;
        }
      }
      if (c === "'") {
        plain = false;
        const end = s.indexOf("'", this.pos + 1);
        if (end < 0) throw ShellSyntaxError.atEnd('unterminated quoted string');
        lit(s.slice(this.pos + 1, end), true);
        // An empty '' still makes a (empty) word.
        if (end === this.pos + 1) parts.push({ type: 'lit', text: '', quoted: true });
        this.pos = end + 1;
      } else if (c === '"') {
        plain = false;
        this.pos++;
        let any = false;
        while (this.pos < s.length && s[this.pos] !== '"') {
          any = true;
          const d = s[this.pos]!;
          if (d === '\\' && this.pos + 1 < s.length && '$`"\\\n'.includes(s[this.pos + 1]!)) {
            if (s[this.pos + 1] !== '\n') lit(s[this.pos + 1]!, true);
            this.pos += 2;
          } else if (d === '$' || d === '`') {
            const part = this.dollar(true);
            if (part) parts.push(part);
            else {
              lit(d, true);
              this.pos++;
            }
          } else {
            lit(d, true);
            this.pos++;
          }
        }
        if (s[this.pos] !== '"') throw ShellSyntaxError.atEnd('unterminated quoted string');
        this.pos++;
        if (!any) parts.push({ type: 'lit', text: '', quoted: true });
      } else if (c === '\\') {
        plain = false;
        if (this.pos + 1 < s.length) lit(s[this.pos + 1]!, true);
        this.pos += 2;
      } else if (c === '$' && s[this.pos + 1] === "'") {
        // $'...': a quoted string with C's backslash sequences.
        plain = false;
        const quoted = cString(s, this.pos + 2);
        lit(quoted.text, true);
        if (quoted.text === '') parts.push({ type: 'lit', text: '', quoted: true });
        this.pos = quoted.end;
      } else if (c === '$' || c === '`') {
        const part = this.dollar(false);
        if (part) {
          plain = false;
          parts.push(part);
        } else {
          lit(c, false);
          this.pos++;
        }
      } else {
        lit(c, false);
        this.pos++;
      }
    }
    return { type: 'word', word: { parts }, raw: s.slice(start, this.pos), plain };
  }

  /**
   * The tilde prefix at pos (`~`, `~+`, `~-`) and the variable it stands for, if it is one:
   * first in the word, or after `NAME=` or a `:` in an assignment; followed by `/`, the
   * word's end (or a `:` in an assignment).
   */
  private tildePrefix(wordStart: number): { name: string; length: number } | null {
    const before = this.src.slice(wordStart, this.pos);
    const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/.test(before);
    // In an assignment's value, each :-separated part may begin with ~ (PATH=$PATH:~/bin).
    if (before !== '' && !(assignment && (before.endsWith('=') || before.endsWith(':')))) return null;
    const ends = (at: number) => {
      const after = this.src[at];
      return (
        after === undefined ||
        after === '/' ||
        (assignment && after === ':') ||
        ' \t\r\n;&|()<>'.includes(after)
      );
    };
    if (ends(this.pos + 1)) return { name: 'HOME', length: 1 };
    const which = this.src[this.pos + 1];
    if ((which === '+' || which === '-') && ends(this.pos + 2))
      return { name: which === '+' ? 'PWD' : 'OLDPWD', length: 2 };
    return null;
  }

  /** Parses `$name`, `${...}`, `$(...)` or a backtick substitution at pos; null if just a `$`. */
  private dollar(quoted: boolean): WordPart | null {
    const s = this.src;
    if (s[this.pos] === '`') {
      let i = this.pos + 1;
      let body = '';
      while (i < s.length && s[i] !== '`') {
        if (s[i] === '\\' && i + 1 < s.length && '$`\\'.includes(s[i + 1]!)) {
          body += s[i + 1];
          i += 2;
        } else body += s[i++];
      }
      if (s[i] !== '`') throw ShellSyntaxError.atEnd('unterminated `');
      this.pos = i + 1;
      return { type: 'cmdsub', source: body, quoted };
    }
    const next = s[this.pos + 1];
    // $((...)) unless it does not close with )): then $( (subshell) ... ), as in mksh.
    const arithmetic = next === '(' && s[this.pos + 2] === '(' ? arithmeticEnd(s, this.pos + 3) : -1;
    if (arithmetic >= 0) {
      const source = s.slice(this.pos + 3, arithmetic);
      this.pos = arithmetic + 2;
      return { type: 'arith', expression: new Lexer(source).hereDocumentWord(), quoted };
    }
    if (next === '(') {
      const end = matchParen(s, this.pos + 1);
      const source = s.slice(this.pos + 2, end);
      this.pos = end + 1;
      return { type: 'cmdsub', source, quoted };
    }
    if (next === '{') {
      const end = matchBrace(s, this.pos + 1);
      const body = s.slice(this.pos + 2, end);
      this.pos = end + 1;
      return braced(body, quoted);
    }
    if (isNameStart(next)) {
      let i = this.pos + 1;
      while (isNameChar(s[i])) i++;
      const name = s.slice(this.pos + 1, i);
      this.pos = i;
      return { type: 'param', name, op: '', arg: null, quoted };
    }
    if (next !== undefined && /[0-9?$#@*!-]/.test(next)) {
      this.pos += 2;
      return { type: 'param', name: next, op: '', arg: null, quoted };
    }
    return null;
  }

  /**
   * Lexes the whole source as one word, quotes and all (the inside of `${X:-default words}`
   * and `${X/pattern/replacement}`), where blanks and operators are characters like others.
   */
  wordOnly(): Word {
    const t = this.word('');
    return t.type === 'word' ? t.word : { parts: [] };
  }
}

/** Index of the `)` matching the `(` at open, honouring quotes and nesting. */
/**
 * Where the `))` that ends an arithmetic expression starting at `from` is (past the
 * parentheses inside it); -1 when its parentheses close otherwise (`((a); (b))` is two
 * subshells in one).
 */
function arithmeticEnd(s: string, from: number): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')' && depth-- === 0) return s[i + 1] === ')' ? i : -1;
  }
  return -1;
}

/** Skips a quoted string or an escaped character at `i`; returns the index of its last character. */
/** Single-character sequences of `$'...'`. */
const C_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/**
 * The text of a `$'...'` string whose body starts at `start`: `\n` and the other C escapes,
 * `\NNN` octal, `\xHH`, `\uHHHH`, `\UHHHHHHHH`, `\cX`; `end` is past the closing quote.
 */
function cString(s: string, start: number): { text: string; end: number } {
  let text = '';
  for (let i = start; i < s.length; i++) {
    const c = s[i]!;
    if (c === "'") return { text, end: i + 1 };
    if (c !== '\\' || i + 1 >= s.length) {
      text += c;
      continue;
    }
    const n = s[++i]!;
    const digits = (re: RegExp) => re.exec(s.slice(i + 1))?.[0] ?? '';
    if (n in C_ESCAPES) text += C_ESCAPES[n];
    else if (/[0-7]/.test(n)) {
      const more = digits(/^[0-7]{0,2}/);
      text += String.fromCharCode(parseInt(n + more, 8) & 0xff);
      i += more.length;
    } else if (n === 'x' || n === 'u' || n === 'U') {
      const hex = digits(
        n === 'x' ? /^[0-9a-fA-F]{1,2}/ : n === 'u' ? /^[0-9a-fA-F]{1,4}/ : /^[0-9a-fA-F]{1,8}/,
      );
      if (hex === '') text += `\\${n}`;
      else
        text += n === 'x' ? String.fromCharCode(parseInt(hex, 16)) : String.fromCodePoint(parseInt(hex, 16));
      i += hex.length;
    } else if (n === 'c' && i + 1 < s.length) text += String.fromCharCode(s.charCodeAt(++i) & 0x1f);
    else text += `\\${n}`;
  }
  throw ShellSyntaxError.atEnd('unterminated quoted string');
}

function skipQuoted(s: string, i: number): number {
  const c = s[i];
  if (c === '\\') return i + 1;
  if (c === "'" && s[i - 1] === '$' && s[i - 2] !== '\\') {
    // $'...': a backslash quotes the next character, a quote too.
    for (i++; i < s.length && s[i] !== "'"; i++) if (s[i] === '\\') i++;
    return i;
  }
  if (c === "'") {
    const end = s.indexOf("'", i + 1);
    return end < 0 ? s.length : end;
  }
  if (c === '"') {
    i++;
    while (i < s.length && s[i] !== '"') {
      if (s[i] === '\\') i++;
      i++;
    }
  }
  return i;
}

/**
 * `${...}`'s inside: a parameter, maybe with an array subscript (`a[i]`, `a[@]`, `a[*]`),
 * and what is done with it.
 */
function braced(body: string, quoted: boolean): WordPart {
  const sub = /^([#!]?)([A-Za-z_][A-Za-z0-9_]*)\[/.exec(body);
  if (sub) {
    const close = matchBracket(body, sub[0].length - 1);
    const subscript = body.slice(sub[0].length, close);
    const index =
      subscript === '@' || subscript === '*' ? subscript : new Lexer(subscript).hereDocumentWord();
    const rest = body.slice(close + 1);
    const name = sub[2]!;
    if (sub[1] === '#' && rest === '') return { type: 'param', name, op: 'length', arg: null, index, quoted };
    if (sub[1] === '!' && rest === '' && typeof index === 'string')
      return { type: 'param', name, op: 'keys', arg: null, index, quoted };
    if (sub[1] !== '') throw new ShellSyntaxError(`\${${body}}: bad substitution`);
    const part = braced(name + rest, quoted);
    // Of all the elements, mksh takes only defaults and checks (`${a[@]:-x}`), no patterns or substrings.
    if (
      part.type === 'param' &&
      typeof index === 'string' &&
      !['', ':-', '-', ':+', '+', ':?', '?'].includes(part.op)
    )
      throw new ShellSyntaxError(`\${${body}}: bad substitution`);
    return { ...part, index } as WordPart;
  }
  if (body.startsWith('#') && body.length > 1 && /^#([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*!-])$/.test(body))
    return { type: 'param', name: body.slice(1), op: 'length', arg: null, quoted };
  const m =
    /^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*!-])(:-|-|:=|=|:\+|\+|:\?|\?|%%|%|##|#|\/\/|\/#|\/%|\/|:)?([\s\S]*)$/.exec(
      body,
    );
  if (!m || (!m[2] && m[3])) throw new ShellSyntaxError(`\${${body}}: bad substitution`);
  const op = (m[2] ?? '') as ParamOp;
  const rest = m[3] ?? '';
  if (op.startsWith('/')) {
    // ${X/pattern/replacement}: the pattern ends at the first / outside quotes.
    const slash = splitAt(rest, '/');
    const pattern = new Lexer(slash < 0 ? rest : rest.slice(0, slash)).wordOnly();
    const replacement = slash < 0 ? null : new Lexer(rest.slice(slash + 1)).wordOnly();
    return { type: 'param', name: m[1]!, op, arg: pattern, second: replacement, quoted };
  }
  if (op === ':') {
    // ${X:offset:length}: two arithmetic expressions.
    const colon = splitAt(rest, ':');
    const offset = colon < 0 ? rest : rest.slice(0, colon);
    if (offset.trim() === '') throw new ShellSyntaxError(`\${${body}}: bad substitution`);
    const length = colon < 0 ? null : new Lexer(rest.slice(colon + 1)).hereDocumentWord();
    return {
      type: 'param',
      name: m[1]!,
      op,
      arg: new Lexer(offset).hereDocumentWord(),
      second: length,
      quoted,
    };
  }
  let arg: Word | null = null;
  if (op)
    arg = quoted ? new Lexer(rest).hereDocumentWord({ doubleQuoted: true }) : new Lexer(rest).wordOnly();
  return { type: 'param', name: m[1]!, op, arg, quoted };
}

/** The `]` that closes the `[` at `open` (subscripts may hold brackets); a bad substitution if none. */
function matchBracket(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '[') depth++;
    else if (s[i] === ']' && --depth === 0) return i;
  }
  throw new ShellSyntaxError('missing ]');
}

/** The `}` that closes the `{` at `open`, past nested `${...}` and quotes. */
function matchBrace(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' || c === "'" || c === '"') i = skipQuoted(s, i);
    // Only ${ opens another: a lone { inside is a character (${x:-{}).
    else if (c === '{' && (i === open || s[i - 1] === '$')) depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  throw new ShellSyntaxError('bad substitution');
}

/** Where `separator` first occurs in `s` outside quotes and parentheses (-1: nowhere). */
function splitAt(s: string, separator: string): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' || c === "'" || c === '"') i = skipQuoted(s, i);
    else if (c === '(' || (c === '{' && s[i - 1] === '$')) depth++;
    else if ((c === ')' || c === '}') && depth > 0) depth--;
    else if (c === separator && depth === 0) return i;
  }
  return -1;
}

/** The `)` that closes the `(` at `open`, past quotes, comments and here-document bodies. */
function matchParen(s: string, open: number): number {
  let depth = 0;
  // Here-documents begun on the current line: their bodies follow its newline.
  const heredocs: { delimiter: string; stripTabs: boolean }[] = [];
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' || c === "'" || c === '"') i = skipQuoted(s, i);
    else if (c === '$' && s[i + 1] === '(' && s[i + 2] === '(' && arithmeticEnd(s, i + 3) >= 0) {
      // $((...)): its << is a shift, not a here-document.
      i = arithmeticEnd(s, i + 3) + 1;
    } else if (c === '<' && s[i + 1] === '<' && s[i + 2] !== '<') {
      const m = /^<<(-?)[ \t]*('([^']*)'|"([^"]*)"|\\?([^\s;&|()<>]+))/.exec(s.slice(i));
      if (m) {
        heredocs.push({ delimiter: m[3] ?? m[4] ?? m[5]!, stripTabs: m[1] === '-' });
        i += m[0].length - 1;
      }
    } else if (c === '\n' && heredocs.length > 0) {
      for (const doc of heredocs.splice(0)) {
        for (;;) {
          const end = s.indexOf('\n', i + 1);
          const line = s.slice(i + 1, end < 0 ? s.length : end);
          i = end < 0 ? s.length : end;
          if ((doc.stripTabs ? line.replace(/^\t+/, '') : line) === doc.delimiter || end < 0) break;
        }
      }
    } else if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) return i;
    }
  }
  throw ShellSyntaxError.atEnd('unterminated $(');
}

class Parser {
  private readonly lexer: Lexer;
  /** Tokens read ahead (at most two: a function definition is known by `name (`). */
  private readonly ahead: Token[] = [];
  /** Where each token read ahead begins in the source. */
  private readonly aheadStarts: number[] = [];
  /** Where the last token taken ends. */
  private takenEnd = 0;

  constructor(src: string) {
    this.lexer = new Lexer(src);
  }

  /** Whether the parser needed a token past the end of the source. */
  endReached = false;

  private peek(n = 0): Token {
    while (this.ahead.length <= n) {
      const t = this.lexer.next();
      if (t.type === 'eof') this.endReached = true;
      this.ahead.push(t);
      this.aheadStarts.push(this.lexer.tokenStart);
    }
    return this.ahead[n]!;
  }

  private take(): Token {
    const t = this.peek();
    this.ahead.shift();
    this.aheadStarts.shift();
    // The next token's start is past this one's end and its trailing blanks: the end of a
    // taken token is where the lexer stood, unless a further token was already read ahead.
    this.takenEnd = this.ahead.length > 0 ? this.endBefore(this.aheadStarts[0]!) : this.lexer.pos;
    return t;
  }

  /** The end of the text before `start`, without the blanks between. */
  private endBefore(start: number): number {
    let end = start;
    while (end > 0 && /[ \t\r]/.test(this.lexer.src[end - 1]!)) end--;
    return end;
  }

  private isOp(...ops: string[]): boolean {
    const t = this.peek();
    return t.type === 'op' && ops.includes(t.op);
  }

  private isReserved(word: string): boolean {
    const t = this.peek();
    return t.type === 'word' && t.plain && t.raw === word;
  }

  private expectReserved(word: string): void {
    if (!this.isReserved(word)) throw new ShellSyntaxError(`syntax error: expected '${word}'${this.near()}`);
    this.take();
  }

  private near(): string {
    const t = this.peek();
    if (t.type === 'eof') return ': unexpected end of file';
    if (t.type === 'word') return `: unexpected '${t.raw}'`;
    if (t.type === 'op') return `: unexpected '${t.op}'`;
    return '';
  }

  private skipNewlines(): void {
    while (this.peek().type === 'newline') this.take();
  }

  parseProgram(): List {
    const list = this.list(new Set());
    if (this.peek().type !== 'eof') throw new ShellSyntaxError(`syntax error${this.near()}`);
    return list;
  }

  /** A list, stopping before a reserved word in `stop` or a `)`. */
  private list(stop: Set<string>): List {
    const items: List = [];
    this.skipNewlines();
    for (;;) {
      const t = this.peek();
      if (t.type === 'eof') break;
      if (t.type === 'op' && (t.op === ')' || t.op === ';;' || t.op === ';&' || t.op === ';|')) break;
      if (t.type === 'word' && t.plain && stop.has(t.raw)) break;
      const andOr = this.andOr();
      let background = false;
      const sep = this.peek();
      if (sep.type === 'op' && (sep.op === ';' || sep.op === '&')) {
        background = sep.op === '&';
        this.take();
      } else if (sep.type === 'newline') {
        this.take();
      } else {
        items.push({ andOr, background });
        break;
      }
      items.push({ andOr, background });
      this.skipNewlines();
    }
    return items;
  }

  private andOr(): AndOr {
    this.peek();
    const start = this.aheadStarts[0]!;
    const first = this.pipeline();
    const rest: AndOr['rest'] = [];
    for (;;) {
      const t = this.peek();
      if (t.type === 'op' && (t.op === '&&' || t.op === '||')) {
        this.take();
        this.skipNewlines();
        rest.push({ op: t.op, pipeline: this.pipeline() });
      } else break;
    }
    return { first, rest, text: this.lexer.src.slice(start, this.takenEnd) };
  }

  private pipeline(): Pipeline {
    let negate = false;
    if (this.isReserved('!')) {
      this.take();
      negate = true;
    }
    const commands = [this.command()];
    while (this.isOp('|')) {
      this.take();
      this.skipNewlines();
      commands.push(this.command());
    }
    return { negate, commands };
  }

  private command(): Command {
    const t = this.peek();
    const start = this.aheadStarts[0]!;
    const end =
      t.type === 'op' && t.op === '(' && this.lexer.src[start + 1] === '('
        ? arithmeticEnd(this.lexer.src, start + 2)
        : -1;
    if (end >= 0) {
      // (( expression )): read as text, as $((...)) is.
      this.ahead.length = 0;
      this.aheadStarts.length = 0;
      this.lexer.pos = end + 2;
      this.takenEnd = end + 2;
      const expression = new Lexer(this.lexer.src.slice(start + 2, end)).hereDocumentWord();
      return { type: 'arith', expression, redirects: this.redirects() };
    }
    if (t.type === 'op' && t.op === '(') {
      this.take();
      const body = this.list(new Set());
      if (!this.isOp(')')) throw new ShellSyntaxError(`syntax error: expected ')'${this.near()}`);
      this.take();
      return { type: 'subshell', body, redirects: this.redirects() };
    }
    if (t.type === 'word' && t.plain) {
      switch (t.raw) {
        case '{': {
          this.take();
          const body = this.list(new Set(['}']));
          this.expectReserved('}');
          return { type: 'group', body, redirects: this.redirects() };
        }
        case 'if':
          return this.ifCommand();
        case '[[':
          return this.condCommand();
        case 'while':
        case 'until': {
          this.take();
          const cond = this.list(new Set(['do']));
          this.expectReserved('do');
          const body = this.list(new Set(['done']));
          this.expectReserved('done');
          return { type: t.raw, cond, body, redirects: this.redirects() };
        }
        case 'for':
          return this.forCommand();
        case 'case':
          return this.caseCommand();
        case 'function': {
          // ksh's `function name compound-command`
          this.take();
          const nameTok = this.take();
          if (nameTok.type !== 'word' || !isFunctionName(nameTok.raw))
            throw new ShellSyntaxError(`syntax error: bad function name${this.near()}`);
          this.skipNewlines();
          return { type: 'function', name: nameTok.raw, body: this.command(), redirects: [] };
        }
        case 'then':
        case 'elif':
        case 'else':
        case 'fi':
        case 'do':
        case 'done':
        case 'esac':
        case '}':
          throw new ShellSyntaxError(`syntax error: unexpected '${t.raw}'`);
      }
    }
    // POSIX `name() compound-command`
    const next = this.peek(1);
    if (t.type === 'word' && t.plain && isFunctionName(t.raw) && next.type === 'op' && next.op === '(') {
      this.take();
      this.take();
      if (!this.isOp(')')) throw new ShellSyntaxError(`syntax error: expected ')'${this.near()}`);
      this.take();
      this.skipNewlines();
      return { type: 'function', name: t.raw, body: this.command(), redirects: [] };
    }
    return this.simple();
  }

  /** `[[ expression ]]`: its operators are read as they are, not as lists or redirections. */
  private condCommand(): Command {
    this.take();
    const items: CondItem[] = [];
    for (;;) {
      const t = this.take();
      if (t.type === 'eof')
        throw new ShellSyntaxError("syntax error: unexpected end of input, expecting ']]'");
      if (t.type === 'newline') continue;
      if (t.type === 'word' && t.plain && t.raw === ']]') break;
      if (t.type === 'op' && ['&&', '||', '(', ')', '<', '>'].includes(t.op)) items.push({ op: t.op });
      else if (t.type === 'word') items.push({ word: t.word, raw: t.raw, plain: t.plain });
      else
        throw new ShellSyntaxError(
          `syntax error: '${t.type === 'op' ? t.op : String(t.fd)}' unexpected operator/operand`,
        );
    }
    if (items.length === 0) throw new ShellSyntaxError("syntax error: ']]' unexpected operator/operand");
    return { type: 'cond', expr: parseCond(items), redirects: this.redirects() };
  }

  private ifCommand(): Command {
    this.take();
    const clauses: { cond: List; body: List }[] = [];
    let otherwise: List | null = null;
    const cond = this.list(new Set(['then']));
    this.expectReserved('then');
    clauses.push({ cond, body: this.list(new Set(['elif', 'else', 'fi'])) });
    for (;;) {
      if (this.isReserved('elif')) {
        this.take();
        const c = this.list(new Set(['then']));
        this.expectReserved('then');
        clauses.push({ cond: c, body: this.list(new Set(['elif', 'else', 'fi'])) });
      } else if (this.isReserved('else')) {
        this.take();
        otherwise = this.list(new Set(['fi']));
      } else break;
    }
    this.expectReserved('fi');
    return { type: 'if', clauses, otherwise, redirects: this.redirects() };
  }

  /** `case WORD in [(]PATTERN[|PATTERN]) LIST ;; ... esac` */
  private caseCommand(): Command {
    this.take();
    const subject = this.take();
    if (subject.type !== 'word')
      throw new ShellSyntaxError(`syntax error: expected a word after case${this.near()}`);
    this.skipNewlines();
    this.expectReserved('in');
    this.skipNewlines();
    const clauses: CaseClause[] = [];
    while (!this.isReserved('esac')) {
      if (this.isOp('(')) this.take();
      const patterns: Word[] = [];
      for (;;) {
        const p = this.take();
        if (p.type !== 'word') throw new ShellSyntaxError(`syntax error: bad case pattern${this.near()}`);
        patterns.push(p.word);
        if (!this.isOp('|')) break;
        this.take();
      }
      if (!this.isOp(')')) throw new ShellSyntaxError(`syntax error: expected ')'${this.near()}`);
      this.take();
      const body = this.list(new Set(['esac']));
      const end = this.peek();
      const then = end.type === 'op' && (end.op === ';&' || end.op === ';|') ? end.op : ';;';
      clauses.push({ patterns, body, then });
      if (this.isOp(';;', ';&', ';|')) this.take();
      this.skipNewlines();
      if (this.peek().type === 'eof')
        throw new ShellSyntaxError("syntax error: expected 'esac': unexpected end of file");
    }
    this.take();
    return { type: 'case', word: subject.word, clauses, redirects: this.redirects() };
  }

  private forCommand(): Command {
    this.take();
    const nameTok = this.take();
    if (nameTok.type !== 'word' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(nameTok.raw))
      throw new ShellSyntaxError('syntax error: bad for loop variable');
    let items: Word[] | null = null;
    this.skipNewlines();
    if (this.isReserved('in')) {
      this.take();
      items = [];
      for (;;) {
        const t = this.peek();
        if (t.type !== 'word') break;
        this.take();
        items.push(t.word);
      }
    }
    const sep = this.peek();
    if (sep.type === 'op' && sep.op === ';') this.take();
    this.skipNewlines();
    this.expectReserved('do');
    const body = this.list(new Set(['done']));
    this.expectReserved('done');
    return { type: 'for', name: nameTok.raw, items, body, redirects: this.redirects() };
  }

  private redirects(): Redirect[] {
    const out: Redirect[] = [];
    for (;;) {
      const r = this.redirect();
      if (!r) return out;
      out.push(r);
    }
  }

  private redirect(): Redirect | null {
    const t = this.peek();
    let fd: number | null = null;
    if (t.type === 'ionum') {
      this.take();
      fd = t.fd;
    }
    const opTok = this.peek();
    if (opTok.type !== 'op' || !REDIRECT_OPS.has(opTok.op)) {
      if (fd !== null) throw new ShellSyntaxError('syntax error: bad redirection');
      return null;
    }
    this.take();
    const target = this.take();
    if (target.type !== 'word')
      throw new ShellSyntaxError(`syntax error: redirection without a target${this.near()}`);
    if (opTok.op === '<<' || opTok.op === '<<-') {
      // The body comes after this line; the delimiter is the word with its quotes removed.
      const redirect: Redirect = { fd: fd ?? 0, op: '<<', target: { parts: [] } };
      const delimiter = target.word.parts.map((p) => (p.type === 'lit' ? p.text : '')).join('');
      this.lexer.heredocs.push({
        delimiter,
        stripTabs: opTok.op === '<<-',
        quoted: !target.plain,
        redirect,
      });
      return redirect;
    }
    const op = opTok.op as RedirectOp;
    return { fd: fd ?? (op === '<' || op === '<&' || op === '<<<' ? 0 : 1), op, target: target.word };
  }

  /** `NAME=( words )`: the words between the parentheses (newlines may part them). */
  private arrayElements(): Word[] {
    this.take();
    const elements: Word[] = [];
    for (;;) {
      const t = this.take();
      if (t.type === 'op' && t.op === ')') return elements;
      if (t.type === 'word') elements.push(t.word);
      else if (t.type !== 'newline') {
        if (t.type === 'eof') throw ShellSyntaxError.atEnd("syntax error: unexpected EOF: expected ')'");
        throw new ShellSyntaxError(`syntax error: unexpected '${t.type === 'op' ? t.op : 'newline'}'`);
      }
    }
  }

  /** `NAME[subscript]=value` (or `+=`): an array element's assignment; null for another word. */
  private elementAssignment(t: Token): Assignment | null {
    if (t.type !== 'word') return null;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\[/.exec(t.raw);
    if (!m) return null;
    let depth = 0;
    for (let i = m[0].length - 1; i < t.raw.length; i++) {
      if (t.raw[i] === '[') depth++;
      else if (t.raw[i] === ']' && --depth === 0) {
        const op = /^\]\+?=/.exec(t.raw.slice(i));
        if (!op) return null;
        return {
          name: m[1]!,
          index: new Lexer(t.raw.slice(m[0].length, i)).hereDocumentWord(),
          value: new Lexer(t.raw.slice(i + op[0].length)).wordOnly(),
          ...(op[0].includes('+') ? { append: true } : {}),
        };
      }
    }
    return null;
  }

  private simple(): Command {
    const assigns: Assignment[] = [];
    const words: Word[] = [];
    const redirects: Redirect[] = [];
    for (;;) {
      const r = this.redirect();
      if (r) {
        redirects.push(r);
        continue;
      }
      const t = this.peek();
      if (t.type !== 'word') break;
      if (words.length === 0) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)(\+?)=/.exec(t.raw);
        const first = t.word.parts[0];
        if (m && first && first.type === 'lit' && !first.quoted && first.text.startsWith(m[0])) {
          this.take();
          const rest = { ...first, text: first.text.slice(m[0].length) };
          const value = { parts: [rest, ...t.word.parts.slice(1)] };
          const assignment: Assignment = m[2] ? { name: m[1]!, value, append: true } : { name: m[1]!, value };
          if (t.raw === m[0] && this.isOp('(')) assignment.elements = this.arrayElements();
          assigns.push(assignment);
          continue;
        }
        const element = this.elementAssignment(t);
        if (element) {
          this.take();
          assigns.push(element);
          continue;
        }
      }
      this.take();
      words.push(t.word);
    }
    if (words.length === 0 && assigns.length === 0 && redirects.length === 0) {
      throw new ShellSyntaxError(`syntax error${this.near()}`);
    }
    return { type: 'simple', assigns, words, redirects };
  }
}

const REDIRECT_OPS = new Set(['>', '>>', '<', '>&', '<&', '&>', '>|', '<<', '<<-', '<<<']);

export function parseShell(source: string): List {
  const parser = new Parser(source);
  try {
    return parser.parseProgram();
  } catch (error) {
    // The lexer says so of unclosed quotes, substitutions and here-documents; an unclosed
    // if, loop or group is found when the parser needed a token past the end.
    if (error instanceof ShellSyntaxError && parser.endReached) error.incomplete = true;
    throw tooDeep(error) ?? error;
  }
}

function unclosedHeredoc(doc: HeredocEnd): ShellSyntaxError {
  const error = ShellSyntaxError.atEnd(`here document '${doc.delimiter}' unclosed`);
  error.heredoc = { delimiter: doc.delimiter, stripTabs: doc.stripTabs };
  return error;
}

/**
 * Whether `source` is the beginning of a command that further lines would complete: false,
 * or what it waits for (inside a here-document, the one line that can end it).
 */
export function incompleteShell(source: string): false | { heredoc: HeredocEnd | null } {
  try {
    parseShell(source);
    return false;
  } catch (error) {
    return error instanceof ShellSyntaxError && error.incomplete ? { heredoc: error.heredoc } : false;
  }
}

/** Whether `line` ends the here-document `end` (any other line is part of its body). */
export function endsHeredoc(line: string, end: HeredocEnd): boolean {
  return (end.stripTabs ? line.replace(/^\t+/, '') : line) === end.delimiter;
}

/**
 * A JavaScript stack overflow (nesting deeper than this parser and evaluator recurse) as
 * the shell's error; null for any other error.
 */
export function tooDeep(error: unknown): ShellSyntaxError | null {
  return error instanceof RangeError && /call stack/i.test(error.message)
    ? new ShellSyntaxError('nested too deeply for the virtual phone')
    : null;
}
