/**
 * toybox sed as Android 14 ships it (toybox 0.8.9). Every expected value below is toybox
 * 0.8.9's answer, run through mksh with the same command line.
 */
import { describe, expect, it } from 'vitest';
import { Device } from '../../server/devices/virtual/device.js';
import { createCommandTable } from '../../server/devices/virtual/shell/commands/index.js';
import { BufferInput, BufferOutput } from '../../server/devices/virtual/shell/io.js';
import { Interpreter, initialShellState } from '../../server/devices/virtual/shell/interpreter.js';
import { buildSystemImage } from '../../server/devices/virtual/system-image.js';
import { quietLog } from '../support/virtual-adb.js';

const systemRoot = buildSystemImage();
const commands = createCommandTable();

async function sh(source: string) {
  const device = new Device({ systemRoot, log: quietLog });
  const stdout = new BufferOutput();
  const stderr = new BufferOutput();
  const shell = new Interpreter(device, commands, initialShellState(device));
  const code = await shell.run(
    source,
    { stdin: new BufferInput(Buffer.from('')), stdout, stderr },
    new AbortController().signal,
  );
  return { code, out: stdout.text(), err: stderr.text() };
}

describe('sed s/// replacements (toybox 0.8.9)', () => {
  it('reads \\n and \\t in the replacement as a newline and a tab', async () => {
    expect((await sh("printf 'abc\\n' | sed 's/b/\\n/'")).out).toBe('a\nc\n');
    expect((await sh("printf 'abc\\n' | sed 's/b/\\t/'")).out).toBe('a\tc\n');
  });

  it('reads \\\\ as one backslash, even just before the closing delimiter', async () => {
    expect(await sh("printf 'abc\\n' | sed 's/b/\\\\/'")).toEqual({ code: 0, out: 'a\\c\n', err: '' });
    expect((await sh("printf 'a/b\\\\c\\n' | sed 's/a\\/b/X/; s/\\\\/Y/'")).out).toBe('XYc\n');
    expect((await sh("printf 'x\\n' | sed 's/x/a\\/b\\\\\\\\c/'")).out).toBe('a/b\\\\c\n');
  });

  it('reads groups, & and \\& as toybox does', async () => {
    expect((await sh("printf 'ab\\n' | sed -E 's/(a)(b)/\\2\\n\\1\\t&\\&/'")).out).toBe('b\na\tab&\n');
    expect((await sh("printf 'abc\\n' | sed 's/\\(b\\)/[\\1&]/'")).out).toBe('a[bb]c\n');
    expect((await sh("printf 'a$c\\n' | sed 's/c/$$/'")).out).toBe('a$$$\n');
  });
});

describe('sed q (toybox 0.8.9)', () => {
  it('quits after printing the line, with the exit status given', async () => {
    expect(await sh("printf 'a\\nb\\nc\\n' | sed '2q5'")).toEqual({ code: 5, out: 'a\nb\n', err: '' });
    expect(await sh("printf 'a\\nb\\nc\\n' | sed 2q")).toEqual({ code: 0, out: 'a\nb\n', err: '' });
  });
});
