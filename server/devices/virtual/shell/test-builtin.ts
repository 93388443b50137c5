/**
 * `test` and `[` as Android's shell (mksh) runs them as builtins: POSIX's rules for one to
 * four arguments, mksh's grammar beyond (`!`, `( )`, `-a`, `-o`), integer comparisons of
 * arithmetic expressions (`[ "1+1" -eq 2 ]`), `-v NAME`, `-o OPTION`, and mksh's errors
 * (`[: missing ]`, `-gt: missing second argument`, `b: unexpected operator/operand`) with
 * status 2. `/system/bin/test` is toybox's and stays in the command table.
 */
import type { FsView } from '../fs.js';
import { FsError, normalizePath } from '../fs.js';
import type { Stat } from '../fs.js';
import { ShellSyntaxError } from './parse.js';

/** What the test reads of the shell it runs in. */
export interface TestShell {
  fs: FsView;
  cwd: string;
  uid: number;
  gid: number;
  /** `-v NAME`: whether the variable is set. */
  isSet(name: string): boolean;
  /** `-o NAME`: whether the option is on; null for an option the shell does not have. */
  option(name: string): boolean | null;
  /** An integer comparison's operand, as `$((...))` computes it; throws its error. */
  arithmetic(expression: string): number;
  /** `-t FD`: whether the descriptor is a terminal. */
  isTerminal(fd: number): boolean;
}

const UNARY = new Set([
  '-a',
  '-b',
  '-c',
  '-d',
  '-e',
  '-f',
  '-G',
  '-g',
  '-H',
  '-h',
  '-k',
  '-L',
  '-n',
  '-O',
  '-o',
  '-p',
  '-r',
  '-S',
  '-s',
  '-t',
  '-u',
  '-v',
  '-w',
  '-x',
  '-z',
]);

const BINARY = new Set([
  '=',
  '==',
  '!=',
  '<',
  '>',
  '-eq',
  '-ne',
  '-gt',
  '-ge',
  '-lt',
  '-le',
  '-ef',
  '-nt',
  '-ot',
]);

/**
 * A file test (`-e`, `-f`, `-d`, `-h`/`-L`, `-s`, `-r`, `-w`, `-x`, `-c`, `-u`, `-g`, `-k`,
 * `-O`, `-G`) as test(1) answers it, mksh's and toybox's alike: false for a missing file.
 * The phone's files hold no block devices, FIFOs or sockets (`-b`, `-p`, `-S` are false).
 */
export function fileTest(
  fs: FsView,
  cwd: string,
  op: string,
  operand: string,
  owner: { uid: number; gid: number },
): boolean {
  const path = normalizePath(operand, cwd);
  try {
    if (op === '-h' || op === '-L') return fs.lstat(path).kind === 'link';
    const st = fs.stat(path);
    switch (op) {
      case '-e':
        return true;
      case '-f':
        return st.kind === 'file';
      case '-d':
        return st.kind === 'dir';
      case '-c':
        return st.kind === 'chr';
      case '-s':
        return st.size > 0;
      case '-r':
        return fs.canAccess(path, { read: true });
      case '-w':
        return fs.isWritable(path);
      case '-x':
        return fs.canAccess(path, { exec: true });
      case '-u':
        return (st.mode & 0o4000) !== 0;
      case '-g':
        return (st.mode & 0o2000) !== 0;
      case '-k':
        return (st.mode & 0o1000) !== 0;
      case '-O':
        return st.uid === owner.uid;
      case '-G':
        return st.gid === owner.gid;
      default:
        return false;
    }
  } catch (error) {
    if (error instanceof FsError) return false;
    throw error;
  }
}

/** An error the test reports (mksh's bi_errorf): the status is 2. */
class TestError extends Error {}

/** Runs `test ARGS` (or `[ ARGS ]`); writes mksh's error to `error` and returns the status. */
export function mkshTest(
  name: string,
  argv: string[],
  shell: TestShell,
  error: (message: string) => void,
): number {
  let args = argv;
  if (name === '[') {
    if (args[args.length - 1] !== ']') {
      error(`[: missing ]`);
      return 2;
    }
    args = args.slice(0, -1);
  }
  try {
    const result = new TestParser(args, shell).run();
    return result ? 0 : 1;
  } catch (thrown) {
    if (thrown instanceof TestError) {
      error(`${name}: ${thrown.message}`);
      return 2;
    }
    // An operand of -eq that is not an expression: the arithmetic's own message.
    if (thrown instanceof ShellSyntaxError) {
      error(thrown.message);
      return 2;
    }
    throw thrown;
  }
}

class TestParser {
  private pos = 0;

  constructor(
    private readonly args: string[],
    private readonly shell: TestShell,
  ) {}

  run(): boolean {
    const special = this.posix(this.args.length, false);
    if (special !== null) return special;
    this.pos = 0;
    const result = this.or(true);
    if (this.pos < this.args.length) this.fail(0, 'unexpected operator/operand');
    return result;
  }

  /** POSIX's answers for up to four arguments; null where mksh's grammar decides. */
  private posix(count: number, invert: boolean): boolean | null {
    const at = (k: number) => this.args[this.pos + k];
    const done = (value: boolean) => value !== invert;
    switch (count) {
      case 0:
        return done(false);
      case 1:
        return done(at(0) !== '');
      case 2:
        if (at(0) === '!') {
          this.pos++;
          return this.posix(1, !invert);
        }
        if (UNARY.has(at(0)!)) return done(this.unary(at(0)!, at(1)!));
        return null;
      case 3:
        if (BINARY.has(at(1)!)) return done(this.binary(at(0)!, at(1)!, at(2)!));
        if (at(1) === '-a') return done(at(0) !== '' && at(2) !== '');
        if (at(1) === '-o') return done(at(0) !== '' || at(2) !== '');
        if (at(0) === '!') {
          this.pos++;
          return this.posix(2, !invert);
        }
        if (at(0) === '(' && at(2) === ')') {
          this.pos++;
          return this.posix(1, invert);
        }
        return null;
      case 4:
        if (at(0) === '!') {
          this.pos++;
          return this.posix(3, !invert);
        }
        if (at(0) === '(' && at(3) === ')') {
          this.pos++;
          return this.posix(2, invert);
        }
        return null;
      default:
        return null;
    }
  }

  private take(token: string): boolean {
    if (this.args[this.pos] !== token) return false;
    this.pos++;
    return true;
  }

  private or(evaluate: boolean): boolean {
    const left = this.and(evaluate);
    if (this.take('-o')) return this.or(evaluate && !left) || left;
    return left;
  }

  private and(evaluate: boolean): boolean {
    const left = this.not(evaluate);
    if (this.take('-a')) return this.and(evaluate && left) && left;
    return left;
  }

  private not(evaluate: boolean): boolean {
    if (this.take('!')) return !this.not(evaluate);
    return this.primary(evaluate);
  }

  private primary(evaluate: boolean): boolean {
    if (this.take('(')) {
      const value = this.or(evaluate);
      if (!this.take(')')) this.fail(0, 'missing )');
      return value;
    }
    const args = this.args;
    // A binary operator after it makes this an operand (`test \( -f = -f \)`).
    if (this.pos + 1 < args.length && !BINARY.has(args[this.pos + 1]!) && UNARY.has(args[this.pos]!)) {
      const op = args[this.pos++]!;
      const operand = args[this.pos++]!;
      return evaluate && this.unary(op, operand);
    }
    const left = args[this.pos++];
    if (left === undefined) this.fail(0, 'expression expected');
    const op = args[this.pos];
    if (op !== undefined && BINARY.has(op)) {
      this.pos++;
      const right = args[this.pos];
      if (right === undefined) this.fail(-1, 'missing second argument');
      this.pos++;
      return evaluate && this.binary(left, op, right);
    }
    return evaluate && left !== '';
  }

  /** mksh's ptest_error: the message, after the argument at `offset` from here if there is one. */
  private fail(offset: number, message: string): never {
    const arg = this.args[this.pos + offset];
    throw new TestError(arg === undefined ? message : `${arg}: ${message}`);
  }

  private stat(operand: string, follow = true): Stat | null {
    const path = normalizePath(operand, this.shell.cwd);
    try {
      return follow ? this.shell.fs.stat(path) : this.shell.fs.lstat(path);
    } catch (error) {
      if (error instanceof FsError) return null;
      throw error;
    }
  }

  private unary(op: string, operand: string): boolean {
    switch (op) {
      case '-n':
        return operand !== '';
      case '-z':
        return operand === '';
      case '-v':
        return this.shell.isSet(operand);
      case '-o': {
        const mark = operand[0] === '!' || operand[0] === '?' ? operand[0] : '';
        const on = this.shell.option(mark ? operand.slice(1) : operand);
        if (on === null) return false;
        return mark === '?' ? true : mark === '!' ? !on : on;
      }
      case '-t': {
        const fd = Number(operand);
        if (!/^\d+$/.test(operand)) throw new TestError(`bad number: ${operand}`);
        return this.shell.isTerminal(fd);
      }
    }
    const { fs, cwd, uid, gid } = this.shell;
    return fileTest(fs, cwd, op === '-a' ? '-e' : op, operand, { uid, gid });
  }

  private binary(left: string, op: string, right: string): boolean {
    switch (op) {
      case '=':
      case '==':
        return left === right;
      case '!=':
        return left !== right;
      case '<':
        return left < right;
      case '>':
        return left > right;
      case '-nt': {
        const a = this.stat(left);
        const b = this.stat(right);
        return a !== null && (b === null || a.mtimeMs > b.mtimeMs);
      }
      case '-ot': {
        const a = this.stat(left);
        const b = this.stat(right);
        return b !== null && (a === null || a.mtimeMs < b.mtimeMs);
      }
      case '-ef': {
        const a = this.stat(left);
        const b = this.stat(right);
        return a !== null && b !== null && a.ino === b.ino;
      }
    }
    const l = this.shell.arithmetic(left);
    const r = this.shell.arithmetic(right);
    switch (op) {
      case '-eq':
        return l === r;
      case '-ne':
        return l !== r;
      case '-gt':
        return l > r;
      case '-ge':
        return l >= r;
      case '-lt':
        return l < r;
      default:
        return l <= r;
    }
  }
}
