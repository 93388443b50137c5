/**
 * Chrome's command-line file as Chrome for Android reads it: which file (CommandLineInitUtil)
 * and how its text splits into words (CommandLine.tokenizeQuotedArguments).
 */
import { describe, expect, it } from 'vitest';
import {
  DEBUG_COMMAND_LINE,
  ROOT_COMMAND_LINE,
  chromeSwitches,
  tokenizeQuotedArguments,
  type CommandLineSource,
} from '../../server/devices/virtual/browser/command-line.js';

const CHROME = 'com.android.chrome';

function phone(options: {
  files?: Record<string, string>;
  global?: Record<string, string>;
  props?: Record<string, string>;
}): CommandLineSource {
  return {
    globalSetting: (key) => ({ adb_enabled: '1', ...options.global })[key] ?? null,
    prop: (key) => ({ 'ro.build.type': 'user', 'ro.debuggable': '0', ...options.props })[key] ?? null,
    read: (path) => options.files?.[path] ?? null,
  };
}

describe('tokenizeQuotedArguments', () => {
  it('splits at whitespace and keeps quoted whitespace, dropping the quotes', () => {
    expect(tokenizeQuotedArguments('_  --a=1\t--b="x y"\n--c=\'p q\'')).toEqual([
      '_',
      '--a=1',
      '--b=x y',
      '--c=p q',
    ]);
  });

  it('keeps the other kind of quote inside a quote, a backslashed quote as a literal, and makes no word of quotes alone', () => {
    expect(tokenizeQuotedArguments(`_ --a="it's" --b='say "hi"' --c=\\"d\\" "" ''`)).toEqual([
      '_',
      "--a=it's",
      '--b=say "hi"',
      '--c="d"',
    ]);
    // An unterminated quote runs to the end.
    expect(tokenizeQuotedArguments('_ --a="x y')).toEqual(['_', '--a=x y']);
  });

  it("refuses a file over Chrome's limit as Chrome does", () => {
    expect(() => tokenizeQuotedArguments('x'.repeat(96 * 1024 + 1))).toThrow('Flags file too big: 98305');
  });
});

describe('chromeSwitches', () => {
  const line =
    '_ --disable-fre --remote-debugging-socket-name=mine --disable-popup-blocking -- --not-a-switch';

  it('reads /data/local/tmp when Chrome is the debug app and adb is on; the socket name is applied, first-run switches change nothing, the rest are named', () => {
    const read = chromeSwitches(
      phone({ files: { [DEBUG_COMMAND_LINE]: line }, global: { debug_app: CHROME } }),
      CHROME,
    );
    expect(read).toEqual({
      file: DEBUG_COMMAND_LINE,
      words: line.split(' '),
      socketName: 'mine',
      userAgent: null,
      notApplied: ['--disable-popup-blocking'],
      debugFileIgnored: false,
    });
  });

  it('ignores /data/local/tmp on a user build while Chrome is not the debug app, or adb is off', () => {
    const globals: Record<string, string>[] = [
      {},
      { debug_app: 'com.other' },
      { debug_app: CHROME, adb_enabled: '0' },
    ];
    for (const global of globals) {
      const read = chromeSwitches(phone({ files: { [DEBUG_COMMAND_LINE]: line }, global }), CHROME);
      expect(read).toMatchObject({ file: null, socketName: null, debugFileIgnored: true });
    }
    // The root-only file is read instead when there is one.
    const rooted = chromeSwitches(
      phone({
        files: { [DEBUG_COMMAND_LINE]: line, [ROOT_COMMAND_LINE]: '_ --remote-debugging-socket-name=root' },
      }),
      CHROME,
    );
    expect(rooted).toMatchObject({ file: ROOT_COMMAND_LINE, socketName: 'root', debugFileIgnored: true });
  });

  it('reads /data/local/tmp on a debuggable build; an empty socket name keeps the default', () => {
    const builds: Record<string, string>[] = [{ 'ro.build.type': 'userdebug' }, { 'ro.debuggable': '1' }];
    for (const props of builds) {
      const read = chromeSwitches(
        phone({ files: { [DEBUG_COMMAND_LINE]: '_ --remote-debugging-socket-name=' }, props }),
        CHROME,
      );
      expect(read).toMatchObject({ file: DEBUG_COMMAND_LINE, socketName: null, notApplied: [] });
    }
  });

  it('applies --user-agent, quoted as Playwright writes it', () => {
    const read = chromeSwitches(
      phone({
        files: { [DEBUG_COMMAND_LINE]: `_ --user-agent='I am Foo'` },
        global: { debug_app: CHROME },
      }),
      CHROME,
    );
    expect(read).toMatchObject({ userAgent: 'I am Foo', notApplied: [] });
  });

  it('reads nothing without a file', () => {
    expect(chromeSwitches(phone({ global: { debug_app: CHROME } }), CHROME)).toEqual({
      file: null,
      words: null,
      socketName: null,
      userAgent: null,
      notApplied: [],
      debugFileIgnored: false,
    });
  });
});
