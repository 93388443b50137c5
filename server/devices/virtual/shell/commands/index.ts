/** The command table: every program the phone's shell can run. */
import type { CommandFn, CommandTable } from '../command.js';
import { am, monkey } from './am.js';
import { bugreportz } from './bugreport.js';
import { APPLET_COMMANDS, toyboxCommand } from './applets.js';
import { appops, makeCmd } from './cmd.js';
import { dd } from './dd.js';
import { screenrecord } from './screenrecord.js';
import { sed } from './sed.js';
import { find } from './find.js';
import { HEXDUMP_COMMANDS } from './hexdump.js';
import { DISPLAY_COMMANDS } from './display.js';
import { dumpsys } from './dumpsys.js';
import { FILE_COMMANDS } from './files.js';
import { logcat } from './logcat.js';
import { nc } from './nc.js';
import { netstat } from './netstat.js';
import { pm } from './pm.js';
import { PROCESS_COMMANDS } from './procs.js';
import { SYSTEM_COMMANDS } from './system.js';
import { TEXT_COMMANDS } from './text.js';
import { UTILITY_COMMANDS } from './utils.js';
import { withToyboxOptions } from '../toybox-options.js';

export function createCommandTable(): CommandTable {
  const table = new Map<string, CommandFn>();
  const get = () => table;
  for (const group of [
    FILE_COMMANDS,
    TEXT_COMMANDS,
    SYSTEM_COMMANDS,
    PROCESS_COMMANDS,
    UTILITY_COMMANDS,
    DISPLAY_COMMANDS,
    APPLET_COMMANDS,
    HEXDUMP_COMMANDS,
  ]) {
    for (const [name, fn] of Object.entries(group)) table.set(name, withToyboxOptions(name, fn));
  }
  // ps reads its options itself: `--sort -rss` takes the next argument, as toybox's long
  // options do, which the generic check would take for the options -r -s -s.
  table.set('ps', PROCESS_COMMANDS.ps!);
  table.set('am', am);
  table.set('monkey', monkey);
  table.set('pm', pm);
  table.set('appops', appops);
  table.set('cmd', makeCmd(get));
  table.set('dumpsys', dumpsys);
  table.set('logcat', logcat);
  table.set('nc', nc);
  table.set('netstat', withToyboxOptions('netstat', netstat));
  table.set('bugreportz', bugreportz);
  table.set('dd', dd);
  table.set('sed', sed);
  table.set('screenrecord', screenrecord);
  table.set('find', find);
  // toybox multiplexer: `toybox ls` runs ls; `toybox` alone lists its applets (only toybox's).
  table.set('toybox', toyboxCommand(get));
  return table;
}
