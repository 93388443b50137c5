/**
 * The shell's patterns (`*`, `?`, `[...]`, `\x`) as `case`, `[[ == ]]`, `${X%pat}` and
 * `${X/pat/rep}` match them. A pattern runs as a set of positions stepped over the text
 * (no backtracking), so matching costs the text's length times the pattern's, whatever the
 * input: a script cannot stall the phone with `*a*a*a*a*b` against a long string.
 */

type Token = { star: true } | { star: false; test: (c: string) => boolean };

/** A compiled pattern. */
export class Glob {
  private readonly tokens: Token[];
  /** The pattern's first literal character, when it begins with one (where a match can start). */
  private readonly first: string | null;

  private constructor(tokens: Token[], first: string | null) {
    this.tokens = tokens;
    this.first = first;
  }

  static compile(pattern: string): Glob {
    const tokens: Token[] = [];
    let first: string | null = null;
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]!;
      let literal: string | null = null;
      if (c === '\\' && i + 1 < pattern.length) literal = pattern[++i]!;
      else if (c === '*') {
        // Stars in a row are one star.
        if (!tokens.at(-1)?.star) tokens.push({ star: true });
        continue;
      } else if (c === '?') tokens.push({ star: false, test: () => true });
      else if (c === '[' && pattern.indexOf(']', i + 2) > 0) {
        const end = pattern.indexOf(']', i + 2);
        let body = pattern.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        const re = new RegExp(`^[${body.replace(/\\/g, '\\\\')}]$`, 's');
        tokens.push({ star: false, test: (ch) => re.test(ch) });
        i = end;
      } else literal = c;
      if (literal !== null) {
        if (tokens.length === 0) first = literal;
        const want = literal;
        tokens.push({ star: false, test: (ch) => ch === want });
      }
    }
    return new Glob(tokens, first);
  }

  /** The same pattern read backwards (a suffix of a text is a prefix of it reversed). */
  reversed(): Glob {
    return new Glob([...this.tokens].reverse(), null);
  }

  /** Whether the pattern matches all of `text`. */
  matches(text: string): boolean {
    return this.ends(text, 0, 'longest') === text.length;
  }

  /**
   * Where the shortest or longest match beginning at `from` ends (-1: none): the pattern's
   * positions are stepped over the text together, and the walk stops when none is left.
   */
  ends(text: string, from: number, which: 'shortest' | 'longest'): number {
    const m = this.tokens.length;
    let states = new Uint8Array(m + 1);
    let next = new Uint8Array(m + 1);
    states[0] = 1;
    this.close(states);
    let best = states[m] ? from : -1;
    if (best >= 0 && which === 'shortest') return best;
    for (let i = from; i < text.length; i++) {
      const c = text[i]!;
      next.fill(0);
      let any = false;
      for (let p = 0; p < m; p++) {
        if (!states[p]) continue;
        const t = this.tokens[p]!;
        if (t.star) {
          next[p] = 1;
          any = true;
        } else if (t.test(c)) {
          next[p + 1] = 1;
          any = true;
        }
      }
      if (!any) break;
      this.close(next);
      [states, next] = [next, states];
      if (states[m]) {
        best = i + 1;
        if (which === 'shortest') return best;
      }
    }
    return best;
  }

  /** The leftmost match at or after `from`, the longest there; null when there is none. */
  search(text: string, from: number): { from: number; to: number } | null {
    const anywhere = this.tokens[0]?.star === true;
    for (let start = from; start <= text.length; start++) {
      if (this.first !== null) {
        // A match can only begin where the pattern's first character is.
        start = text.indexOf(this.first, start);
        if (start < 0) return null;
      }
      const to = this.ends(text, start, 'longest');
      if (to >= 0) return { from: start, to };
      // A pattern that begins with * matches from here if it matches from anywhere later.
      if (anywhere) return null;
    }
    return null;
  }

  /** A star: matches any run of characters, none included. */
  private close(states: Uint8Array): void {
    for (let p = 0; p < this.tokens.length; p++) if (states[p] && this.tokens[p]!.star) states[p + 1] = 1;
  }
}

/**
 * `${X%pat}` `${X%%pat}` `${X#pat}` `${X##pat}`: the text without the shortest (or longest,
 * doubled) match of the pattern at its end (%) or start (#).
 */
export function removePattern(text: string, pattern: string, op: '%' | '%%' | '#' | '##'): string {
  const which = op.length === 2 ? 'longest' : 'shortest';
  if (op.startsWith('#')) {
    const end = Glob.compile(pattern).ends(text, 0, which);
    return end < 0 ? text : text.slice(end);
  }
  const backwards = [...text].reverse().join('');
  const end = Glob.compile(pattern).reversed().ends(backwards, 0, which);
  return end < 0 ? text : [...backwards.slice(end)].reverse().join('');
}

/**
 * `${X/pattern/replacement}` and its kinds: the longest match at the first place the
 * pattern matches is replaced (`//`: every match, `/#`: a match at the start, `/%`: at the
 * end). An empty pattern replaces nothing, except at the start or end (`/#`, `/%`).
 */
export function substitutePattern(
  text: string,
  pattern: string,
  replacement: string,
  op: '/' | '//' | '/#' | '/%',
): string {
  if (pattern === '' && op !== '/#' && op !== '/%') return text;
  const glob = Glob.compile(pattern);
  if (op === '/#') {
    const end = glob.ends(text, 0, 'longest');
    return end < 0 ? text : replacement + text.slice(end);
  }
  if (op === '/%') {
    const backwards = [...text].reverse().join('');
    const length = glob.reversed().ends(backwards, 0, 'longest');
    return length < 0 ? text : text.slice(0, text.length - length) + replacement;
  }
  let out = '';
  let at = 0;
  for (;;) {
    const match = glob.search(text, at);
    if (!match) break;
    out += text.slice(at, match.from) + replacement;
    if (op === '/') return out + text.slice(match.to);
    if (match.to > match.from) at = match.to;
    else {
      // An empty match: the character after it stays, and the search goes on past it.
      if (match.from >= text.length) {
        at = text.length;
        break;
      }
      out += text[match.from];
      at = match.from + 1;
    }
    // A match that reached the end ends it (no empty match after it).
    if (at >= text.length) break;
  }
  return out + text.slice(at);
}
