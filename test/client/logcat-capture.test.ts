/**
 * Where a followed log starts: logcat's -T counts whole seconds, so the capture logs a line
 * of its own as it starts and leaves out what came before it in that second; and when that
 * line never comes back (a phone whose clock was set back), it keeps everything rather than
 * lose the log. A phone's log here is a stream the test writes, as logcat would print it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReadableStream } from '@yume-chan/stream-extra';
import { describe, expect, it } from 'vitest';
import type { RunningCommand } from '../../src/adb/phone-adb.js';
import { LogcatCapture, type LogcatSource } from '../../src/logcat/capture.js';
import { tempDir } from './helpers.js';

/** A phone whose log is what the test says, and whose `log -t phonelease` lines come back (unless `echoStart` is false). */
function fakePhone(echoStart = true) {
  let push!: (line: string) => void;
  let startLine = '';
  const output = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (line) =>
        controller.enqueue(new TextEncoder().encode(`11-27 06:00:00.000  100  100 I ${line}\n`));
    },
  });
  const source: LogcatSource = {
    async spawn(command) {
      startLine = /log -t phonelease '([^']+)'/.exec(command)?.[1] ?? '';
      const running: RunningCommand = {
        output,
        exited: new Promise(() => undefined),
        kill: async () => undefined,
      };
      return running;
    },
    async shell(command) {
      const logged = /^log -t phonelease '([^']+)'$/.exec(command)?.[1];
      if (logged) push(`phonelease: ${logged}`);
    },
  };
  return {
    source,
    log: (line: string) => push(line),
    logStart: () => {
      if (echoStart) push(`phonelease: ${startLine}`);
    },
    startLine: () => startLine,
  };
}

describe('a followed log starts where the capture started', () => {
  it('leaves out the lines logcat gives from earlier in the same second', async () => {
    const phone = fakePhone();
    const path = join(tempDir('phonelease-logcat-'), 'log.txt');
    const capture = await LogcatCapture.start(phone.source, { path });
    expect(phone.startLine()).toMatch(/^the log phonelease follows starts here \([0-9a-f]{8}\)$/);
    phone.log('Earlier: the test before ends');
    phone.logStart();
    phone.log('Test: this test runs');
    const result = await capture.stop();
    const log = readFileSync(path, 'utf8');
    expect(log).not.toContain('the test before ends');
    expect(log).toContain('Test: this test runs');
    expect(log.split('\n')[0]).toContain(phone.startLine());
    expect(result.lines).toBe(log.trimEnd().split('\n').length);
  });

  it('keeps every line when its start line never comes back', async () => {
    const phone = fakePhone(false);
    const path = join(tempDir('phonelease-logcat-'), 'log.txt');
    const capture = await LogcatCapture.start(phone.source, { path });
    phone.log('Test: first');
    phone.log('Test: second');
    await capture.stop();
    const log = readFileSync(path, 'utf8');
    expect(log).toContain('Test: first');
    expect(log).toContain('Test: second');
    expect(log.indexOf('Test: first')).toBeLessThan(log.indexOf('Test: second'));
  });
});
