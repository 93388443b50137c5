/**
 * `bugreportz` (version 1.2, as Android 14's): a zipped bug report of the phone, what
 * `adb bugreport` asks for (`bugreportz -v`, then `bugreportz -p`, then it pulls the file
 * the `OK:` line names). The report is dumpstate's layout (a header, then one section per
 * command, each with its duration) over what the virtual phone has: uptime, memory,
 * processes, properties, the logs, network sockets and the main dumpsys services. The zip
 * holds it with `version.txt`, `main_entry.txt` and `dumpstate_log.txt`, as a phone's
 * does, in /bugreports (/data/user_de/0/com.android.shell/files/bugreports).
 *
 * The plain-text `bugreport` of Android 6 and earlier is not modeled (adb uses it only when
 * bugreportz fails, which it does not here).
 */
import { performance } from 'node:perf_hooks';
import { writeZip } from '../../../../../src/apk/zip.js';
import { SHELL_CREDENTIALS } from '../../fs.js';
import { DEVICE } from '../../identity.js';
import type { CommandContext, CommandFn } from '../command.js';
import { BufferOutput, EMPTY_INPUT } from '../io.js';
import { fullDate } from './format.js';

const VERSION = '1.2';
const BUGREPORTS = '/data/user_de/0/com.android.shell/files/bugreports';

const USAGE = `usage: bugreportz [-hpsv]
  -h: to display this help message
  -p: display progress
  -s: stream content to standard output
  -v: to display the version
  or no arguments to generate a zipped bugreport
`;

/** dumpstate's sections: a title and the command that fills it. */
const SECTIONS: ReadonlyArray<[string, string]> = [
  ['UPTIME', 'uptime'],
  ['MEMORY INFO', 'cat /proc/meminfo'],
  ['CPU INFO', 'top -b -n 1 -d 1 -m 30'],
  ['PROCESSES AND THREADS', 'ps -A -o USER,PID,PPID,VSZ,RSS,WCHAN,ADDR,S,NAME'],
  ['SYSTEM PROPERTIES', 'getprop'],
  ['FILESYSTEMS & FREE SPACE', 'df'],
  ['SYSTEM LOG', 'logcat -v threadtime -d'],
  ['NETWORK SOCKETS', 'netstat -anWtu'],
  ['PACKAGES', 'pm list packages -f'],
  ['DUMPSYS activity', 'dumpsys activity'],
  ['DUMPSYS window', 'dumpsys window'],
  ['DUMPSYS power', 'dumpsys power'],
  ['DUMPSYS meminfo', 'dumpsys meminfo'],
];

async function capture(ctx: CommandContext, command: string): Promise<string> {
  const out = new BufferOutput();
  await ctx.runShell(command, { stdin: EMPTY_INPUT, stdout: out, stderr: out });
  return out.text();
}

/** The report's name: the product, the build and when it was taken, as dumpstate names it. */
function reportName(at: number): string {
  return `bugreport-${DEVICE.product}-${DEVICE.buildId}-${fullDate(at).replace(/[ :]/g, '-')}`;
}

/** The report's zip, calling progress after each section. */
async function report(
  ctx: CommandContext,
  at: number,
  progress: (done: number, total: number) => void,
): Promise<Buffer> {
  const name = reportName(at);
  const prop = (key: string) => ctx.device.props.get(key) || '(unknown)';
  const header = [
    '========================================================',
    `== dumpstate: ${fullDate(at)}`,
    '========================================================',
    '',
    `Build: ${prop('ro.build.display.id')}`,
    `Build fingerprint: '${prop('ro.build.fingerprint')}'`,
    `Bootloader: ${prop('ro.bootloader')}`,
    `Radio: ${prop('gsm.version.baseband')}`,
    `Network: ${prop('gsm.operator.alpha')}`,
    `Kernel: ${(await capture(ctx, 'cat /proc/version')).trim()}`,
    `Uptime: ${(await capture(ctx, 'uptime')).trim()}`,
    'Bugreport format version: 2.0',
    `Dumpstate info: id=1 pid=${ctx.process.pid} dry_run=0 parallel_run=1 args=-S bugreport_mode=BUGREPORT_DEFAULT`,
    '',
  ];
  const body: string[] = [header.join('\n')];
  for (const [i, [title, command]] of SECTIONS.entries()) {
    const started = performance.now();
    const output = await capture(ctx, command);
    const seconds = ((performance.now() - started) / 1000).toFixed(3);
    body.push(
      `------ ${title} (${command}) ------\n${output}------ ${seconds}s was the duration of '${title}' ------\n`,
    );
    progress(i + 1, SECTIONS.length);
  }
  const entries = [
    { name: `${name}.txt`, data: Buffer.from(body.join('\n')) },
    { name: 'version.txt', data: Buffer.from('2.0') },
    { name: 'main_entry.txt', data: Buffer.from(`${name}.txt`) },
    {
      name: 'dumpstate_log.txt',
      data: Buffer.from(`dumpstate id 1 finished in ${SECTIONS.length} sections\n`),
    },
  ];
  return writeZip(entries, new Date(at));
}

/** Leaves a report in /bugreports, owned by the shell user who pulls it; returns its path there. */
function keep(ctx: CommandContext, at: number, zip: Buffer): string {
  const fs = ctx.device.fs;
  if (!fs.exists(BUGREPORTS)) {
    fs.mkdir(BUGREPORTS, { parents: true, mode: 0o770 });
    fs.chown(BUGREPORTS, SHELL_CREDENTIALS.uid, SHELL_CREDENTIALS.gid);
  }
  const file = `${reportName(at)}.zip`;
  fs.writeFile(`${BUGREPORTS}/${file}`, zip, { mode: 0o644 });
  fs.chown(`${BUGREPORTS}/${file}`, SHELL_CREDENTIALS.uid, SHELL_CREDENTIALS.gid);
  return `/bugreports/${file}`;
}

export const bugreportz: CommandFn = async (ctx) => {
  const flags = new Set<string>();
  for (const a of ctx.args) {
    if (!/^-[hpsv]+$/.test(a)) {
      ctx.stderr.write(USAGE);
      return 1;
    }
    for (const f of a.slice(1)) flags.add(f);
  }
  if (flags.has('h')) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  if (flags.has('v')) {
    ctx.stderr.write(`${VERSION}\n`);
    return 0;
  }
  if (flags.has('s')) {
    // Streamed: the zip goes to stdout and nothing stays on the phone.
    ctx.stdout.write(await report(ctx, ctx.device.now(), () => undefined));
    return 0;
  }
  const at = ctx.device.now();
  ctx.stdout.write(`BEGIN:/bugreports/${reportName(at)}.zip\n`);
  const zip = await report(ctx, at, (done, total) => {
    if (flags.has('p')) ctx.stdout.write(`PROGRESS:${done}/${total}\n`);
  });
  ctx.stdout.write(`OK:${keep(ctx, at, zip)}\n`);
  return 0;
};
