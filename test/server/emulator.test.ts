/**
 * The Android SDK emulator backend end to end: a session boots a real emulator, stock adb
 * reaches it through the ADB gateway, and ending the session stops the emulator. Needs the
 * SDK's emulator and an AVD (ANDROID_HOME, PHONELEASE_AVD); the failure path without them is
 * covered in lifecycle.test.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAdb } from '../support/adb.js';
import { startTestServer, type TestServer } from '../support/server.js';

const sdk = process.env.ANDROID_HOME ?? process.env.ANDROID_SDK_ROOT ?? '';
const hasEmulator = sdk !== '' && existsSync(join(sdk, 'emulator', 'emulator'));

describe.skipIf(!hasEmulator)(
  'emulator backend (needs the Android SDK emulator and an AVD; this machine has no SDK emulator)',
  () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer({ device: 'emulator' });
    });
    afterAll(() => t?.close());

    it('boots an emulator for a session, reachable through the gateway, and stops it at the end', async () => {
      const s = (await t.api.post('/sessions', { body: { timeout_seconds: 900 } })).body;
      const ready = await t.api.waitFor(s.id, ['ready', 'error'], 600_000);
      expect(ready.state, JSON.stringify(ready.failure)).toBe('ready');
      expect(ready.device).toMatch(/^Android emulator/);
      const adb = await connectAdb(t.api, s.id);
      try {
        expect((await adb.adb('shell', 'getprop sys.boot_completed')).trim()).toBe('1');
        const png = (await t.api.get(`/sessions/${s.id}/frame.png`)).raw;
        expect(png.subarray(1, 4).toString()).toBe('PNG');
      } finally {
        await adb.close();
      }
      expect((await t.api.delete(`/sessions/${s.id}`)).status).toBeLessThan(300);
      await t.api.waitGone(s.id, 60_000);
    }, 900_000);
  },
);
