/**
 * POSIX regular expressions (basic and extended) as JavaScript ones, for the applets that
 * take them (grep, sed, cut -F): what toybox passes to Android's regcomp, by characters
 * rather than bytes. The errors are bionic's regerror's.
 */

/**
 * A regex error, reported as `bad regex 'RE': MESSAGE` with the message of Android's
 * regerror (bionic's regex is NetBSD's, Henry Spencer's: `invalid backreference number`,
 * not glibc's `Invalid back reference`).
 */
export class RegexError extends Error {}

/** What each POSIX character class holds, inside a JS bracket expression. */
export const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alpha: 'A-Za-z',
  digit: '0-9',
  alnum: '0-9A-Za-z',
  upper: 'A-Z',
  lower: 'a-z',
  space: ' \\t\\n\\r\\f\\v',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
  xdigit: '0-9A-Fa-f',
  cntrl: '\\x00-\\x1f\\x7f',
  print: ' -~',
  graph: '!-~',
};

/**
 * A POSIX regex (basic, or extended) as a JS regex source, as toybox's grep and Android's
 * regcomp read it: [:class:] in brackets, a backslash literal in brackets, `\<` and `\>`
 * at word edges; in a basic one \( \) \{ \} group and count while ( ) { } + ? | are
 * literal, and so are \+ \? \| (toybox matches those patterns as literal text); \1 to \9
 * refer back to a group, counted after `groupBase` groups of patterns joined before this
 * one. Null when a bracket is not closed or a back-reference has no group before it.
 */
export function posixRegexSource(pattern: string, extended: boolean, groupBase = 0): string | null {
  let out = '';
  let groups = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '[') {
      let j = i + 1;
      let body = '';
      if (pattern[j] === '^') {
        body += '^';
        j++;
      }
      if (pattern[j] === ']') {
        body += '\\]';
        j++;
      }
      for (; j < pattern.length && pattern[j] !== ']'; j++) {
        const cls = /^\[:([a-z]+):\]/.exec(pattern.slice(j));
        if (cls && POSIX_CLASSES[cls[1]!] !== undefined) {
          body += POSIX_CLASSES[cls[1]!];
          j += cls[0].length - 1;
        } else if ('\\[]'.includes(pattern[j]!)) body += `\\${pattern[j]}`;
        else body += pattern[j];
      }
      if (j >= pattern.length) return null;
      out += `[${body}]`;
      i = j;
    } else if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[++i]!;
      if (n === '<') out += '\\b(?=\\w)';
      else if (n === '>') out += '\\b(?<=\\w)';
      else if (!extended && '(){}'.includes(n)) {
        if (n === '(') groups++;
        out += n;
      } else if (/[1-9]/.test(n)) {
        if (Number(n) > groups) return null;
        out += `\\${Number(n) + groupBase}`;
      } else if (/[A-Za-z0-9]/.test(n) && !'wWsSbB'.includes(n)) out += n;
      else out += `\\${n}`;
    } else if (!extended && '(){}+?|'.includes(c)) out += `\\${c}`;
    else if (c === '(') {
      groups++;
      out += c;
    } else if (!extended && c === '*' && (out === '' || out.endsWith('(') || out === '^')) out += '\\*';
    else out += c;
  }
  return out;
}

export interface Regex {
  re: RegExp;
  /** How many \( \) groups it has (s///\N beyond that is an error). */
  nsub: number;
}

const escapeChar = (c: string) => (/[\\^$.|?*+()[\]{}/]/.test(c) ? `\\${c}` : c);
const escapeInClass = (c: string) => (/[\\\]^[-]/.test(c) ? `\\${c}` : c);

/** A bracket expression at p[i] (the `[`): its JavaScript class and the index after it. */
function bracket(p: string, i: number): [string, number] {
  let j = i + 1;
  let out = '[';
  if (p[j] === '^') {
    out += '^';
    j++;
  }
  for (let first = true; ; first = false) {
    if (j >= p.length) throw new RegexError('brackets ([ ]) not balanced');
    const c = p[j]!;
    if (c === ']' && !first) return [`${out}]`, j + 1];
    if (c === '[' && ':.='.includes(p[j + 1] ?? '')) {
      const kind = p[j + 1]!;
      const end = p.indexOf(`${kind}]`, j + 2);
      if (end < 0) throw new RegexError('brackets ([ ]) not balanced');
      const name = p.slice(j + 2, end);
      if (kind === ':') {
        const cls = POSIX_CLASSES[name];
        if (cls === undefined) throw new RegexError('invalid character class');
        out += cls;
      } else out += [...name].map(escapeInClass).join('');
      j = end + 2;
    } else if (c === '-' && !first && p[j + 1] !== ']') {
      out += '-';
      j++;
    } else {
      out += escapeInClass(c);
      j++;
    }
  }
}

/** An interval body `m`, `m,`, `,n`, `m,n` at p[i], up to `close`; the quantifier and index after. */
function interval(p: string, i: number, close: string): [string, number] {
  const end = p.indexOf(close, i);
  if (end < 0) throw new RegexError('braces not balanced');
  const body = /^(\d*)(,(\d*))?$/.exec(p.slice(i, end));
  if (!body || (!body[1] && !body[2])) throw new RegexError('invalid repetition count(s)');
  const min = Number(body[1] || '0');
  if (body[3] && Number(body[3]) < min) throw new RegexError('invalid repetition count(s)');
  return [`{${min}${body[2] ?? ''}}`, end + close.length];
}

/** Translates a POSIX basic (or extended) regular expression, with glibc's extensions. */
export function compileRegex(pattern: string, ere: boolean, icase: boolean): Regex {
  let out = '';
  let nsub = 0;
  const open: number[] = [];
  let closed = 0;
  let atStart = true; // where `*` is literal and a BRE `^` anchors
  let atom = -1; // where the last quantifiable thing starts in out
  let quantified = false;
  const addAtom = (s: string) => {
    atom = out.length;
    out += s;
    atStart = false;
    quantified = false;
  };
  const quantify = (q: string) => {
    if (atom < 0) return addAtom(escapeChar(q[0]!) + q.slice(1).replace(/[{}]/g, '\\$&'));
    if (quantified) out = `${out.slice(0, atom)}(?:${out.slice(atom)})`;
    out += q;
    quantified = true;
  };
  const operator = (s: string) => {
    out += s;
    atom = -1;
    atStart = true;
    quantified = false;
  };
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i]!;
    if (c === '[') {
      const [cls, next] = bracket(pattern, i);
      addAtom(cls);
      i = next;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= pattern.length) throw new RegexError('trailing backslash (\\)');
      const n = pattern[i + 1]!;
      i += 2;
      if (!ere && n === '(') {
        open.push(out.length);
        nsub++;
        operator('(');
      } else if (!ere && n === ')') {
        if (open.length === 0) throw new RegexError('parentheses not balanced');
        out += ')';
        atom = open.pop()!;
        closed++;
        atStart = false;
        quantified = false;
      } else if (!ere && n === '{') {
        if (atStart || quantified) throw new RegexError('repetition-operator operand invalid');
        const [q, next] = interval(pattern, i, '\\}');
        quantify(q);
        i = next;
      } else if (!ere && (n === '+' || n === '?')) {
        if (atStart) addAtom(`\\${n}`);
        else quantify(n);
      } else if (!ere && n === '|') operator('|');
      else if (/[1-9]/.test(n)) {
        if (Number(n) > closed) throw new RegexError('invalid backreference number');
        addAtom(`(?:\\${n})`);
      } else if (n === '<') operator('\\b(?=\\w)');
      else if (n === '>') operator('\\b(?<=\\w)');
      else if ('bB'.includes(n)) operator(`\\${n}`);
      else if ('wWsS'.includes(n)) addAtom(`\\${n}`);
      else if (n === '`') operator('^');
      else if (n === "'") operator('$');
      else addAtom(escapeChar(n));
      continue;
    }
    i++;
    if (ere) {
      if (c === '(') {
        open.push(out.length);
        nsub++;
        closed++;
        operator('(');
      } else if (c === ')' && open.length === 0)
        addAtom('\\)'); // glibc: an unopened ) is itself
      else if (c === ')') {
        out += ')';
        atom = open.pop()!;
        atStart = false;
        quantified = false;
      } else if (c === '|') operator('|');
      else if (c === '^') operator('^');
      else if (c === '$') operator('$');
      else if ('*+?'.includes(c)) {
        if (atStart) throw new RegexError('repetition-operator operand invalid');
        quantify(c);
      } else if (c === '{') {
        if (atStart) throw new RegexError('repetition-operator operand invalid');
        const [q, next] = interval(pattern, i, '}');
        quantify(q);
        i = next;
      } else addAtom(c === '.' ? '.' : escapeChar(c));
      continue;
    }
    if (c === '*') {
      if (atStart) addAtom('\\*');
      else if (quantified) throw new RegexError('repetition-operator operand invalid');
      else quantify('*');
    } else if (c === '^') {
      if (atStart) operator('^');
      else addAtom('\\^');
    } else if (c === '$') {
      const rest = pattern.slice(i);
      if (rest === '' || rest.startsWith('\\)') || rest.startsWith('\\|')) operator('$');
      else addAtom('\\$');
    } else addAtom(c === '.' ? '.' : escapeChar(c));
  }
  if (open.length > 0) throw new RegexError('parentheses not balanced');
  try {
    return { re: new RegExp(out, `gs${icase ? 'i' : ''}`), nsub };
  } catch {
    throw new RegexError(
      /Range out of order/.test(out) ? 'invalid character range' : 'invalid regular expression',
    );
  }
}
