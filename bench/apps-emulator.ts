/**
 * What preinstalling the app under test into the golden snapshot saves on emulators: time
 * from leasePhone() until the phone is ready with the app installed, with the app in the
 * golden (`--preinstall`) against installing it in every test, in the same run, on the fake
 * emulator of test/support with the reference's figures (cold boot 20 s, snapshot load 1.5 s).
 * Both servers keep a warm pool of one phone started from their golden (`--pool 1`), as a
 * prepared CI server does, and each timed lease waits until the pool is full again.
 *
 * The app is a real APK of several MB (io.appium.settings, which the Appium driver ships).
 *  - installed per test: lease, then `lease.install(apk)` (a push and `pm install` through
 *    the ADB gateway, which signs in to the emulator's adbd);
 *  - preinstalled: lease, then what a test whose app is preinstalled does: read the record
 *    the phone keeps for the app (its hash and install path) and the app's install path,
 *    and compare them with the APK's hash (one shell command).
 * Each configuration first makes its golden (one cold boot, not timed), then takes LEASES
 * sequential leases. Goal: preinstalled at least 5x faster (p50). The fake's guest is the
 * virtual phone, whose `pm install` costs the transfer and parsing the APK, not the dex
 * optimisation a real emulator spends seconds on: the baseline here is a floor, and so is
 * the ratio.
 *
 * Run: npm run build && npx tsx bench/apps-emulator.ts [--leases 8] [--cold-ms 20000] [--load-ms 1500]
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEmulatorBackend } from '../server/devices/emulator/index.js';
import { appRecordPath } from '../src/apk/app-files.js';
import { createLogger } from '../server/log.js';
import { startServer } from '../server/main.js';
import { leasePhone, silentLogger, type LeaseOptions } from '../src/index.js';
import { makeFakeSdk } from '../test/support/fake-sdk/index.js';
import { poolFull } from './support/pool.js';

const { values } = parseArgs({
  options: {
    leases: { type: 'string', default: '8' },
    'cold-ms': { type: 'string', default: '20000' },
    'load-ms': { type: 'string', default: '1500' },
  },
});
const leases = Number(values.leases);
const APK = fileURLToPath(
  new URL(
    '../node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk',
    import.meta.url,
  ),
);
const PACKAGE = 'io.appium.settings';
const apkBytes = readFileSync(APK);
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
/** The app's hash as the lease records it: over its APKs' hashes (here, one). */
const appHash = sha256(sha256(apkBytes));

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};
const ms = (n: number) => `${n.toFixed(0)} ms`;

type Mode = 'installed per test' | 'preinstalled';

/** LEASES sequential lease-to-ready-with-the-app times on a server of its own. */
async function measure(mode: Mode, env: Record<string, string>): Promise<number[]> {
  const log = createLogger({ level: 'warn' });
  const backend = createEmulatorBackend({
    log: log.child({ backend: 'emulator' }),
    env: { ...process.env, ...env },
    workDir: mkdtempSync(join(tmpdir(), 'phonelease-bench-emu-')),
    preinstall: mode === 'preinstalled' ? [APK] : [],
  });
  const server = await startServer({ backend, phones: 2, pool: 1, metrics: true, log: 'warn' });
  const refilled = () => poolFull(server, 1, 600_000);
  try {
    const { key } = server.createAccount({ billingMode: 'disabled' });
    const options: LeaseOptions = {
      baseUrl: server.url,
      apiKey: key,
      logger: silentLogger,
      ledger: { dir: mkdtempSync(join(tmpdir(), 'phonelease-bench-')) },
      startTimeoutMs: 600_000,
    };
    const withApp = async (): Promise<number> => {
      const t0 = performance.now();
      const lease = await leasePhone(options);
      try {
        if (mode === 'installed per test') await lease.install(apkBytes);
        else {
          const [record = '', path = ''] = (
            await lease.shell(`cat ${appRecordPath(PACKAGE)}; pm path ${PACKAGE}`)
          ).stdout.split('\n');
          if (record.trim() !== `${appHash} ${path.trim().replace(/^package:/, '')}`)
            throw new Error(`the phone does not have this build (${record})`);
        }
        const took = performance.now() - t0;
        const listed = (await lease.shell(`pm list packages ${PACKAGE}`)).stdout;
        if (!listed.includes(`package:${PACKAGE}`)) throw new Error(`${PACKAGE} is not on the phone`);
        return took;
      } finally {
        await lease.end();
      }
    };
    await withApp(); // warm-up: makes the golden (a cold boot), JIT, the reaper
    const times: number[] = [];
    for (let i = 0; i < leases; i++) {
      await refilled();
      times.push(await withApp());
    }
    return times;
  } finally {
    await server.close();
  }
}

const sdk = await makeFakeSdk({
  env: { FAKE_EMULATOR_COLD_BOOT_MS: values['cold-ms'], FAKE_EMULATOR_SNAPSHOT_LOAD_MS: values['load-ms'] },
});
try {
  await sdk.startAdbServer();
  console.log(
    `phonelease app benchmark (fake emulator: cold boot ${values['cold-ms']} ms, snapshot load ${values['load-ms']} ms), ${PACKAGE} ${(apkBytes.length / 1e6).toFixed(1)} MB, ${leases} sequential leases each`,
  );
  const env = { ...sdk.env, PATH: process.env.PATH ?? '' };
  const perTest = await measure('installed per test', env);
  const preinstalled = await measure('preinstalled', env);
  for (const [name, times] of [
    ['installed per test (baseline)', perTest],
    ['preinstalled in the golden', preinstalled],
  ] as const) {
    console.log(`  ${name}: p50 ${ms(percentile(times, 50))}, p95 ${ms(percentile(times, 95))}`);
  }
  const ratio = percentile(perTest, 50) / percentile(preinstalled, 50);
  console.log(
    `  p50 installed per test / preinstalled: ${ratio.toFixed(2)}x (goal >= 5x: ${ratio >= 5 ? 'met' : 'MISSED'})`,
  );
} finally {
  await sdk.close();
}
