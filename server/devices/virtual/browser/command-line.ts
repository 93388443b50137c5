/**
 * Chrome's command-line file, as Chrome for Android reads it when it starts
 * (ChromeCommandLineInitUtil / CommandLineInitUtil): `/data/local/tmp/chrome-command-line`
 * when that file exists and Chrome may use it — adb is enabled and Chrome is the debug app
 * (`am set-debug-app --persistent com.android.chrome`), or the build is debuggable —
 * otherwise `/data/local/chrome-command-line`, which only root can write. Its first word is
 * the program's name; the rest are switches.
 *
 * This is how Playwright's Android support (`_android`) starts Chrome with its own DevTools
 * socket (`--remote-debugging-socket-name`). The virtual phone's Chrome applies that switch
 * and `--user-agent`; the switches that only skip first-run screens change nothing (it has
 * none), and every other switch is named in the log as not applied: the real browser behind
 * it runs with the phone's own switches.
 */
export const DEBUG_COMMAND_LINE = '/data/local/tmp/chrome-command-line';
export const ROOT_COMMAND_LINE = '/data/local/chrome-command-line';

/** What Chrome's start needs to know of the phone. */
export interface CommandLineSource {
  /** A Settings.Global value (null when unset). */
  globalSetting(key: string): string | null;
  /** A system property (null when unset). */
  prop(key: string): string | null;
  /** The file's text as Chrome's process may read it, or null (missing, unreadable). */
  read(path: string): string | null;
}

/** The switches Chrome starts with, from the file it reads (none when there is none). */
export interface ChromeSwitches {
  /** The file read, and its words as Chrome's log prints them (null: no file). */
  file: string | null;
  words: string[] | null;
  /** `--remote-debugging-socket-name`: the DevTools socket's name instead of chrome_devtools_remote. */
  socketName: string | null;
  /** `--user-agent`: the user agent instead of Chrome for Android's own. */
  userAgent: string | null;
  /** The switches the virtual phone's Chrome does not apply, as written. */
  notApplied: string[];
  /** The debug file exists but Chrome may not read it (not the debug app, a user build). */
  debugFileIgnored: boolean;
}

/** Switches whose only effect on Chrome for Android is a first-run screen the phone never shows. */
const FIRST_RUN_SWITCHES = new Set(['disable-fre', 'no-default-browser-check', 'no-first-run']);

/** CommandLineInitUtil.shouldUseDebugCommandLine: the debug app is Chrome, or the build is debuggable. */
function mayUseDebugFile(source: CommandLineSource, pkg: string): boolean {
  const adbEnabled = source.globalSetting('adb_enabled') === '1';
  if (adbEnabled && source.globalSetting('debug_app') === pkg) return true;
  const type = source.prop('ro.build.type');
  return type === 'eng' || type === 'userdebug' || source.prop('ro.debuggable') === '1';
}

/** Chrome's own limit (CommandLine.tokenizeQuotedArguments): a larger file ends Chrome at start. */
const MAX_FILE_CHARS = 96 * 1024;

/**
 * Reads the switches Chrome (the app `pkg`) starts with now. Throws as Chrome does for a file over its limit.
 */
export function chromeSwitches(source: CommandLineSource, pkg: string): ChromeSwitches {
  const debugFile = source.read(DEBUG_COMMAND_LINE);
  const useDebug = debugFile !== null && mayUseDebugFile(source, pkg);
  const file = useDebug ? DEBUG_COMMAND_LINE : ROOT_COMMAND_LINE;
  const text = useDebug ? debugFile : source.read(ROOT_COMMAND_LINE);
  const debugFileIgnored = debugFile !== null && !useDebug;
  const result: ChromeSwitches = {
    file: null,
    words: null,
    socketName: null,
    userAgent: null,
    notApplied: [],
    debugFileIgnored,
  };
  if (text === null) return result;
  const words = tokenizeQuotedArguments(text);
  Object.assign(result, { file, words });
  // The first word is the program's name; after `--` come arguments, not switches.
  for (const word of words.slice(1)) {
    if (word === '--') break;
    if (!word.startsWith('--')) continue;
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    const value = eq < 0 ? '' : word.slice(eq + 1);
    // An empty value is no value (CommandLine.getSwitchValue): the default name stays.
    if (name === 'remote-debugging-socket-name') result.socketName = value || null;
    else if (name === 'user-agent') result.userAgent = value || null;
    else if (!FIRST_RUN_SWITCHES.has(name)) result.notApplied.push(word);
  }
  return result;
}

/**
 * CommandLine.tokenizeQuotedArguments: words split at whitespace; a single or double quote
 * starts a quoted part that runs to the same quote (the quotes are dropped, whitespace in it
 * kept; a quote of the other kind is kept as it is), and a backslash right before a quote
 * makes that quote a literal. Quotes alone make no word.
 */
export function tokenizeQuotedArguments(text: string): string[] {
  if (text.length > MAX_FILE_CHARS) throw new Error(`Flags file too big: ${text.length}`);
  const words: string[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  for (const c of text) {
    if ((quote === null && (c === '"' || c === "'")) || c === quote) {
      if (word?.endsWith('\\')) word = word.slice(0, -1) + c;
      else quote = quote === null ? c : null;
    } else if (quote === null && /\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}
