/**
 * Crash detection on logcat's threadtime lines, as Android 14 phones log a Java crash, an
 * ANR and a native crash's tombstone (interleaved with other processes' lines, as they are
 * in a real log).
 */
import { describe, expect, it } from 'vitest';
import { CrashDetector, findCrashes, parseThreadtime } from '../../src/logcat/crashes.js';

const JAVA_CRASH = `--------- beginning of crash
11-26 10:15:02.118  5123  5123 E AndroidRuntime: FATAL EXCEPTION: main
11-26 10:15:02.118  5123  5123 E AndroidRuntime: Process: com.example.shop, PID: 5123
11-26 10:15:02.118  5123  5123 E AndroidRuntime: java.lang.RuntimeException: Unable to start activity ComponentInfo{com.example.shop/com.example.shop.CartActivity}: java.lang.NullPointerException: Attempt to invoke virtual method 'int java.lang.String.length()' on a null object reference
11-26 10:15:02.118  5123  5123 E AndroidRuntime: 	at android.app.ActivityThread.performLaunchActivity(ActivityThread.java:3782)
11-26 10:15:02.119   860   912 I InputDispatcher: Focus left window (5123)
11-26 10:15:02.118  5123  5123 E AndroidRuntime: 	at android.app.ActivityThread.handleLaunchActivity(ActivityThread.java:3922)
11-26 10:15:02.118  5123  5123 E AndroidRuntime: Caused by: java.lang.NullPointerException: Attempt to invoke virtual method 'int java.lang.String.length()' on a null object reference
11-26 10:15:02.118  5123  5123 E AndroidRuntime: 	at com.example.shop.CartActivity.onCreate(CartActivity.kt:41)
11-26 10:15:02.118  5123  5123 E AndroidRuntime: 	... 12 more
11-26 10:15:02.127  5123  5123 I Process : Sending signal. PID: 5123 SIG: 9
11-26 10:15:02.160   860  1187 I ActivityManager: Process com.example.shop (pid 5123) has died: fg  TOP `;

const ANR = `11-26 10:20:11.402   860  5301 I ActivityManager: dumpStackTraces pids={5444}
11-26 10:20:12.977   860  5301 E ActivityManager: ANR in com.example.shop:sync (com.example.shop/.SyncService)
11-26 10:20:12.977   860  5301 E ActivityManager: PID: 5444
11-26 10:20:12.977   860  5301 E ActivityManager: Reason: executing service com.example.shop/.SyncService
11-26 10:20:12.977   860  5301 E ActivityManager: Parent: com.example.shop/.SyncService
11-26 10:20:12.977   860  5301 E ActivityManager: Load: 2.38 / 1.62 / 0.87
11-26 10:20:12.980   860  5301 I ActivityManager: Killing 5444:com.example.shop:sync/u0a190 (adj 0): bg anr`;

const TOMBSTONE = `11-26 10:30:44.501  6001  6019 F libc    : Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0 in tid 6019 (RenderThread), pid 6001 (com.example.game)
11-26 10:30:44.612  6040  6040 F DEBUG   : *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
11-26 10:30:44.612  6040  6040 F DEBUG   : Build fingerprint: 'google/sdk_gphone64_x86_64/emu64x:14/UE1A.230829.036/10905851:userdebug/dev-keys'
11-26 10:30:44.612  6040  6040 F DEBUG   : Revision: '0'
11-26 10:30:44.612  6040  6040 F DEBUG   : ABI: 'x86_64'
11-26 10:30:44.612  6040  6040 F DEBUG   : Cmdline: com.example.game
11-26 10:30:44.612  6040  6040 F DEBUG   : pid: 6001, tid: 6019, name: RenderThread  >>> com.example.game <<<
11-26 10:30:44.612  6040  6040 F DEBUG   : uid: 10188
11-26 10:30:44.612  6040  6040 F DEBUG   : signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000000
11-26 10:30:44.612  6040  6040 F DEBUG   : backtrace:
11-26 10:30:44.612  6040  6040 F DEBUG   :       #00 pc 000000000004a2b0  /data/app/~~x/com.example.game/lib/x86_64/libgame.so (render+48)
11-26 10:30:44.640   512   512 I tombstoned: Tombstone written to: /data/tombstones/tombstone_03`;

describe('parseThreadtime', () => {
  it('reads pid, tid, priority, tag and message; padded tags and empty messages too', () => {
    expect(
      parseThreadtime('11-26 10:15:02.127  5123  5123 I Process : Sending signal. PID: 5123 SIG: 9'),
    ).toEqual({
      pid: 5123,
      tid: 5123,
      priority: 'I',
      tag: 'Process',
      message: 'Sending signal. PID: 5123 SIG: 9',
      raw: '11-26 10:15:02.127  5123  5123 I Process : Sending signal. PID: 5123 SIG: 9',
    });
    expect(parseThreadtime('11-26 10:15:02.127   860   874 D Zygote  :')).toMatchObject({
      tag: 'Zygote',
      message: '',
    });
    expect(parseThreadtime('--------- beginning of main')).toBeNull();
    expect(parseThreadtime('E/AndroidRuntime( 5123): FATAL EXCEPTION: main')).toBeNull();
  });
});

describe('findCrashes', () => {
  it('names a Java crash’s package and exception, and keeps its lines (not other processes’)', () => {
    const [crash, ...rest] = findCrashes(JAVA_CRASH);
    expect(rest).toEqual([]);
    expect(crash).toMatchObject({
      kind: 'java',
      package: 'com.example.shop',
      process: 'com.example.shop',
      pid: 5123,
      summary:
        "java.lang.RuntimeException: Unable to start activity ComponentInfo{com.example.shop/com.example.shop.CartActivity}: java.lang.NullPointerException: Attempt to invoke virtual method 'int java.lang.String.length()' on a null object reference",
    });
    expect(crash!.lines).toHaveLength(8);
    expect(crash!.lines[0]).toContain('FATAL EXCEPTION: main');
    expect(crash!.lines.at(-1)).toContain('... 12 more');
    expect(crash!.lines.some((l) => l.includes('InputDispatcher'))).toBe(false);
  });

  it('names an ANR’s package, pid and reason', () => {
    expect(findCrashes(ANR)).toEqual([
      {
        kind: 'anr',
        package: 'com.example.shop',
        process: 'com.example.shop:sync',
        pid: 5444,
        summary: 'Application Not Responding: executing service com.example.shop/.SyncService',
        lines: ANR.split('\n').slice(1, 6),
      },
    ]);
  });

  it('names a native crash from its tombstone: the process and the signal', () => {
    const [crash, ...rest] = findCrashes(TOMBSTONE);
    expect(rest).toEqual([]);
    expect(crash).toMatchObject({
      kind: 'native',
      package: 'com.example.game',
      pid: 6001,
      summary: 'signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000000',
    });
    expect(crash!.lines[0]).toContain('*** *** ***');
    expect(crash!.lines).toHaveLength(10);
  });

  it('finds each crash of a log in order, and none in a log without one', () => {
    const all = findCrashes([JAVA_CRASH, ANR, TOMBSTONE].join('\n'));
    expect(all.map((c) => [c.kind, c.package])).toEqual([
      ['java', 'com.example.shop'],
      ['anr', 'com.example.shop'],
      ['native', 'com.example.game'],
    ]);
    expect(findCrashes('11-26 10:15:02.118  5123  5123 E AndroidRuntime: Shutting down VM\n')).toEqual([]);
  });
});

describe('CrashDetector', () => {
  it('reports a crash once its lines have ended, as lines arrive one by one', () => {
    const heard: string[] = [];
    const detector = new CrashDetector((c) => heard.push(c.package));
    const lines = JAVA_CRASH.split('\n');
    for (const line of lines.slice(0, 9)) detector.push(line);
    expect(heard).toEqual([]);
    // The next line of that pid under another tag ends the crash.
    detector.push(lines[10]!);
    expect(heard).toEqual(['com.example.shop']);
    detector.end();
    expect(detector.crashes).toHaveLength(1);
  });

  it('ends a crash still open when the log ends', () => {
    const detector = new CrashDetector();
    for (const line of ANR.split('\n').slice(0, 4)) detector.push(line);
    expect(detector.crashes).toEqual([]);
    detector.end();
    expect(detector.crashes).toMatchObject([{ kind: 'anr', pid: 5444 }]);
  });
});
