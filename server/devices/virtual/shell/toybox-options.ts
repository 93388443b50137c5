/**
 * The options each toybox applet of Android 14 (toybox 0.8.9) accepts, as its declaration
 * lists them: `flags` take no argument, `values` take one (joined, `-n5`, or the next
 * argument); `stop`: options end at the first operand; `lenient`: an unknown option is an
 * operand (`head -5`, `kill -9`). What the applet does with each is its own business; this
 * only refuses what toybox itself refuses, the way it does.
 */
import { fail } from './command.js';
import type { CommandContext, CommandFn } from './command.js';

interface ToyboxOptions {
  flags: string;
  values?: string;
  stop?: true;
  lenient?: true;
  /** The status a refused option exits with, where the applet's declaration gives one (ARGFAIL); 1 otherwise. */
  argfail?: number;
}

const TOYBOX_OPTIONS: Record<string, ToyboxOptions> = {
  base64: { flags: 'di', values: 'w' },
  basename: { flags: 'a', values: 's', stop: true },
  cat: { flags: 'uvte' },
  chmod: { flags: 'vfR', lenient: true },
  chown: { flags: 'hPLHRfv' },
  cmp: { flags: 'ls', values: 'n', argfail: 2 },
  cp: { flags: 'DRHLPprudaslvnFfiT', values: 't' },
  cut: { flags: 'sDn', values: 'bcfFCOd' },
  date: { flags: 'u', values: 'dDIrs' },
  df: { flags: 'HPkhia', values: 't' },
  dmesg: { flags: 'wCSTtrc', values: 'sn' },
  du: { flags: 'hmlcaHkKLsxb', values: 'd' },
  echo: { flags: 'Een', stop: true, lenient: true },
  egrep: { flags: 'ZzEFHIabhinorRsvwcLlqx', values: 'SMefCBAm', argfail: 2 },
  fgrep: { flags: 'ZzEFHIabhinorRsvwcLlqx', values: 'SMefCBAm', argfail: 2 },
  find: { flags: 'HL', stop: true, lenient: true },
  free: { flags: 'hgmkb' },
  getconf: { flags: 'al' },
  grep: { flags: 'ZzEFHIabhinorRsvwcLlqx', values: 'SMefCBAm', argfail: 2 },
  gunzip: { flags: 'cdfk123456789' },
  gzip: { flags: 'ncdfk123456789' },
  head: { flags: 'qv', values: 'nc', lenient: true },
  hostname: { flags: 'bdsf', values: 'F' },
  id: { flags: 'nGgru' },
  kill: { flags: 'l', values: 's', lenient: true },
  killall: { flags: 'ilqvw', values: 's', lenient: true },
  ln: { flags: 'rTvnfs', values: 't' },
  log: { flags: '', values: 'pt' },
  ls: { flags: 'ZgoACFHLNRSabcdfhiklmnpqrstux1', values: 'w' },
  md5sum: { flags: 'bcs' },
  mkdir: { flags: 'vp', values: 'm' },
  mktemp: { flags: 'uqdt', values: 'p' },
  mv: { flags: 'vnFfiT', values: 't' },
  nc: { flags: 'tElL46uUn', values: 'wWpqsf', stop: true },
  netstat: { flags: 'pWrxwutneal' },
  nl: { flags: 'E', values: 'vlwbns' },
  od: { flags: 'vxsodcb', values: 'jwNAt' },
  paste: { flags: 's', values: 'd' },
  pgrep: { flags: 'clfnovx', values: 'duUtsPgGL', lenient: true },
  pidof: { flags: 'sx', values: 'o' },
  pkill: { flags: 'Vfnovx', values: 'uUtsPgGl', lenient: true },
  ps: { flags: 'aAdeflMnTwZ', values: 'kPoOpstuUgG' },
  readlink: { flags: 'vnfemqz' },
  realpath: { flags: 'sLPemqz', values: 'R' },
  rm: { flags: 'fiRrv' },
  rmdir: { flags: 'p' },
  seq: { flags: 'w', values: 'fs', lenient: true },
  sha1sum: { flags: 'bcs' },
  sha224sum: { flags: 'bcs' },
  sha256sum: { flags: 'bcs' },
  sha384sum: { flags: 'bcs' },
  sha512sum: { flags: 'bcs' },
  sort: { flags: 'mxVbMCcszdfirun', values: 'STokt', argfail: 2 },
  stat: { flags: 'fLt', values: 'c' },
  stty: { flags: 'ag', values: 'F', lenient: true },
  tail: { flags: 'fF', values: 'scn', lenient: true },
  tee: { flags: 'ia' },
  timeout: { flags: 'vi', values: 'ks', stop: true, argfail: 125 },
  top: { flags: 'Hhbq', values: 'kopusdmnO' },
  touch: { flags: 'acfmh', values: 'drt' },
  tr: { flags: 'Ccsd', stop: true },
  truncate: { flags: 'c', values: 's' },
  tty: { flags: 's' },
  uname: { flags: 'paomvrns' },
  uniq: { flags: 'zicdu', values: 'fsw' },
  uptime: { flags: 'ps' },
  uuidgen: { flags: 'r' },
  wc: { flags: 'mcwl' },
  which: { flags: 'a' },
  xargs: { flags: 'optr0', values: 'EPns', stop: true },
  xxd: { flags: 'ipr', values: 'clogs' },
  zcat: { flags: 'cdfk123456789' },
};

/** The first short option of `args` that `options` does not have (with what follows it in its group), or null. */
function unknownShortOption(args: readonly string[], options: ToyboxOptions): string | null {
  const values = options.values ?? '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return null;
    // Long options, "-" (stdin) and operands are left to the applet.
    if (!a.startsWith('-') || a === '-' || a.startsWith('--')) {
      if (options.stop) return null;
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const f = a[k]!;
      if (values.includes(f)) {
        if (k === a.length - 1) i++;
        break;
      }
      // toybox names the rest of the group from there (`-I{}` is 'I{}').
      if (!options.flags.includes(f)) return a.slice(k);
    }
  }
  return null;
}

/**
 * The applet, refusing an option toybox's applet of that name does not have as toybox
 * does: `NAME: Unknown option 'X' (see "NAME --help")`, status 1 (or the applet's ARGFAIL).
 */
export function withToyboxOptions(name: string, fn: CommandFn): CommandFn {
  const options = TOYBOX_OPTIONS[name];
  if (!options || options.lenient) return fn;
  return (ctx: CommandContext) => {
    const unknown = unknownShortOption(ctx.args, options);
    if (unknown !== null)
      return fail(ctx, `Unknown option '${unknown}' (see "${ctx.name} --help")`, options.argfail);
    return fn(ctx);
  };
}
