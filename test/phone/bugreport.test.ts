/**
 * `adb bugreport` through stock adb: bugreportz's version and progress protocol, and the
 * zipped report adb pulls (dumpstate's header and sections over what the phone has).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZipReader } from '../../src/apk/zip.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
let dir: string;

beforeAll(async () => {
  v = await startVirtualAdb();
  dir = mkdtempSync(join(tmpdir(), 'phonelease-bugreport-'));
});

afterAll(async () => {
  await v?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('bugreport', () => {
  it('speaks bugreportz 1.2: the version on stderr, BEGIN, PROGRESS and OK lines, usage for a wrong option', async () => {
    expect(await v.adb(['shell', 'bugreportz -v'])).toMatchObject({ code: 0, stdout: '', stderr: '1.2\n' });
    const wrong = await v.adb(['shell', 'bugreportz -x']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^usage: bugreportz \[-hpsv\]\n/);
    const run = await v.adbOk(['shell', 'bugreportz -p']);
    const lines = run.trim().split('\n');
    const begin =
      /^BEGIN:(\/bugreports\/bugreport-shiba-UQ1A\.240205\.004-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.zip)$/.exec(
        lines[0]!,
      );
    expect(begin).not.toBeNull();
    expect(lines.at(-1)).toBe(`OK:${begin![1]}`);
    const progress = lines.slice(1, -1);
    expect(progress.length).toBeGreaterThan(3);
    progress.forEach((l, i) => expect(l).toBe(`PROGRESS:${i + 1}/${progress.length}`));
    // The report stays on the phone for the shell user to pull.
    expect(await v.adbOk(['shell', `ls -l ${begin![1]}`])).toMatch(/^-rw-r--r-- 1 shell shell \d+ /);
  });

  it('is pulled by adb bugreport as a zip whose main entry is dumpstate’s report of the phone', async () => {
    await v.adbOk(['shell', 'log -t BugreportTest "logged before the report"']);
    const run = await v.adb(['bugreport', dir], { timeoutMs: 60_000 });
    expect(run.code).toBe(0);
    const [file] = readdirSync(dir);
    expect(file).toMatch(/^bugreport-shiba-UQ1A\.240205\.004-[\d-]+\.zip$/);
    const zip = new ZipReader(readFileSync(join(dir, file!)));
    expect(zip.read('version.txt')?.toString()).toBe('2.0');
    const main = zip.read('main_entry.txt')!.toString();
    expect(main).toBe(file!.replace(/\.zip$/, '.txt'));
    const report = zip.read(main)!.toString();
    expect(report).toMatch(/^={56}\n== dumpstate: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n={56}\n/);
    expect(report).toContain("Build fingerprint: 'google/shiba/shiba:14/UQ1A.240205.004/");
    expect(report).toContain('------ SYSTEM PROPERTIES (getprop) ------\n');
    expect(report).toContain('[ro.build.version.sdk]: [34]\n');
    expect(report).toMatch(
      /------ SYSTEM LOG \(logcat -v threadtime -d\) ------\n[^]*BugreportTest: logged before the report/,
    );
    expect(report).toMatch(/------ \d+\.\d{3}s was the duration of 'SYSTEM LOG' ------/);
  });
});
