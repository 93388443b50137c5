/**
 * What a prepared phone saves: time from leasePhone({ apps }) to a ready phone that has the
 * app under test, with the app preinstalled by the server (`--preinstall`) against installed
 * per test by the lease, in the same run, with a real APK of several MB (default the
 * UiAutomator2 server APK Appium ships, 17 MB). Goal: preinstalled at least 5x faster.
 *
 * Each variant is one kind of phone and its way of preparing phones; both of its runs keep a
 * warm pool (so neither pays a boot), and each lease waits for the pool to be full again:
 *  - baseline: the pool's phones are bare, so every lease pushes and installs the APK;
 *  - prepared: the server preinstalls the APK into every pooled phone, so the lease finds
 *    it (one shell call) and installs nothing.
 * Variants: `virtual` (the warm pool of virtual phones). An emulator variant (the golden
 * snapshot keyed by the APKs' hashes, on the fake emulator) goes beside it in VARIANTS.
 *
 * Run: npm run build && npx tsx bench/apps.ts [--leases 10] [--pool 2] [--boot-ms 500]
 *        [--apk PATH] [--variants virtual]
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readApps } from '../src/apk/app-files.js';
import { startServer, type RunningServer, type ServerOptions } from '../server/main.js';
import { leasePhone, silentLogger, type LeaseOptions } from '../src/index.js';

const { values } = parseArgs({
  options: {
    leases: { type: 'string', default: '10' },
    pool: { type: 'string', default: '2' },
    'boot-ms': { type: 'string', default: '500' },
    apk: {
      type: 'string',
      default: 'node_modules/appium-uiautomator2-server/apks/appium-uiautomator2-server-v10.6.6.apk',
    },
    variants: { type: 'string', default: 'virtual' },
  },
});
const leases = Number(values.leases);
const pool = Number(values.pool);
const apk = values.apk;

/** One kind of phone: the server it runs on, with or without the app prepared on its phones. */
interface Variant {
  name: string;
  server(prepared: boolean): ServerOptions;
  /** How long a refill may take (a boot, and for prepared phones their install). */
  refillTimeoutMs: number;
}

const VARIANTS: Record<string, Variant> = {
  virtual: {
    name: `virtual phones, warm pool ${pool}, boot ${values['boot-ms']} ms`,
    server: (prepared) => ({ bootMs: Number(values['boot-ms']), ...(prepared ? { preinstall: [apk] } : {}) }),
    refillTimeoutMs: 60_000,
  },
};

const percentile = (samples: number[], p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};
const ms = (n: number) => `${n.toFixed(1)} ms`;

/** Waits until the pool holds `n` warm phones. */
async function poolFull(server: RunningServer, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('phonelease_pool_phones{state="ready"} '));
    if (Number(line?.split(' ')[1]) >= n) return;
    if (Date.now() > deadline) throw new Error(`the pool did not refill to ${n} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** `leases` sequential leases with the app, each from a full pool: their times to ready in ms. */
async function measure(variant: Variant, prepared: boolean): Promise<{ times: number[]; installed: number }> {
  const server = await startServer({
    phones: pool + 1,
    pool,
    metrics: true,
    log: 'warn',
    ...variant.server(prepared),
  });
  try {
    const { key } = server.createAccount({ billingMode: 'disabled', sessionLimit: pool + 1 });
    let installed = 0;
    const options: LeaseOptions = {
      baseUrl: server.url,
      apiKey: key,
      apps: [apk],
      ledger: { dir: mkdtempSync(join(tmpdir(), 'phonelease-bench-')) },
      // Counts the leases that had to install (the lease says so on its progress line).
      logger: { ...silentLogger, info: (m) => void (m.startsWith('installed ') && installed++) },
    };
    // Warm-up: JIT, connections, the reaper process.
    await poolFull(server, pool, variant.refillTimeoutMs);
    await (await leasePhone(options)).end();
    installed = 0;
    const times: number[] = [];
    for (let i = 0; i < leases; i++) {
      await poolFull(server, pool, variant.refillTimeoutMs);
      const t0 = performance.now();
      const lease = await leasePhone(options);
      times.push(performance.now() - t0);
      await lease.end();
    }
    return { times, installed };
  } finally {
    await server.close();
  }
}

const size = statSync(apk).size;
const [app] = readApps([apk]);
console.log(
  `phonelease apps benchmark: ${leases} leases per run, ${app?.package} (${apk}, ${(size / 1024 / 1024).toFixed(1)} MB)`,
);
for (const id of values.variants.split(',')) {
  const variant = VARIANTS[id];
  if (!variant) throw new Error(`unknown variant ${id} (known: ${Object.keys(VARIANTS).join(', ')})`);
  const baseline = await measure(variant, false);
  const prepared = await measure(variant, true);
  const base50 = percentile(baseline.times, 50);
  const prep50 = percentile(prepared.times, 50);
  console.log(`\n${variant.name}`);
  console.log(
    `  installed per test: p50 ${ms(base50)}, p95 ${ms(percentile(baseline.times, 95))} (${baseline.installed} of ${leases} installed)`,
  );
  console.log(
    `  preinstalled:       p50 ${ms(prep50)}, p95 ${ms(percentile(prepared.times, 95))} (${prepared.installed} of ${leases} installed)`,
  );
  console.log(
    `    p50 installed per test / preinstalled: ${(base50 / prep50).toFixed(1)}x (goal >= 5x: ${base50 / prep50 >= 5 ? 'met' : 'MISSED'})`,
  );
}
