/**
 * UI automation on the virtual phone: the login flow with locators (the UiAutomator2
 * server over the lease's ADB) against the same flow with `uiautomator dump` + `input`
 * (what the Playwright example did before locators), in the same run on phones of the
 * same server. Per-action p50 and the whole flow.
 *
 * Goals: locator click p50 <= 40 ms; the whole flow >= 5x faster than the dump baseline.
 *
 * Run: npm run build && node --import tsx bench/ui.ts [rounds]
 */
import { leasePhone, type Lease } from '../src/index.js';
import { parseHierarchy, centre, type UiNode } from '../src/ui/tree.js';
import { startServer } from '../server/main.js';

const ROUNDS = Number(process.argv[2] ?? 15);
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(1)} ms`;

type Timings = Record<string, number[]>;

async function timed<T>(into: Timings, name: string, body: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const value = await body();
  (into[name] ??= []).push(performance.now() - t0);
  return value;
}

/** The flow with locators: every step auto-waits and checks actionability. */
async function locatorFlow(phone: Lease, t: Timings): Promise<void> {
  await phone.shell('am force-stop com.phonelease.login');
  await timed(t, 'launch', () => phone.launch('com.phonelease.login'));
  await timed(t, 'fill', () => phone.getById('username').fill('demo'));
  await timed(t, 'fill', () => phone.getByDesc('password').fill('secret'));
  await timed(t, 'click', () => phone.getByText('Log in').click());
  const text = await timed(t, 'read', () => phone.getById('result').textContent());
  if (text !== 'Welcome, demo!') throw new Error(`locator flow ended with ${JSON.stringify(text)}`);
}

/** The baseline: dump the tree, find by id, tap the centre, type with `input text`. */
async function dumpFlow(phone: Lease, t: Timings): Promise<void> {
  const find = async (id: string): Promise<UiNode> => {
    const r = await phone.shell('uiautomator dump /dev/tty');
    const node = parseHierarchy(r.stdout.slice(r.stdout.indexOf('<'))).nodes.find(
      (n) => n.resourceId === `com.phonelease.login:id/${id}`,
    );
    if (!node) throw new Error(`no ${id} on screen`);
    return node;
  };
  const tap = async (id: string) => {
    const { x, y } = centre((await find(id)).bounds);
    await phone.shell(`input tap ${x} ${y}`);
  };
  await phone.shell('am force-stop com.phonelease.login');
  await timed(t, 'launch', async () => {
    await phone.shell('am start -W -n com.phonelease.login/.LoginActivity');
    await find('username');
  });
  await timed(t, 'fill', async () => {
    await tap('username');
    await phone.shell(`input text demo`);
  });
  await timed(t, 'fill', async () => {
    await tap('password');
    await phone.shell(`input text secret`);
  });
  await timed(t, 'click', () => tap('login'));
  const text = await timed(t, 'read', async () => (await find('result')).text);
  if (text !== 'Welcome, demo!') throw new Error(`dump flow ended with ${JSON.stringify(text)}`);
}

async function measure(phone: Lease, flow: (p: Lease, t: Timings) => Promise<void>): Promise<Timings> {
  const warm: Timings = {};
  await flow(phone, warm); // installs and starts the UI server once; not counted
  const t: Timings = {};
  for (let i = 0; i < ROUNDS; i++) await timed(t, 'flow', () => flow(phone, t));
  return t;
}

const server = await startServer({ port: 0, bootMs: 20, phones: 4, log: 'warn' });
const account = server.createAccount({ billingMode: 'disabled' });
const options = {
  baseUrl: server.url,
  apiKey: account.key,
  reaper: false,
  handleSignals: false,
  ledger: false,
} as const;
try {
  const a = await leasePhone(options);
  const b = await leasePhone(options);
  const locators = await measure(a, locatorFlow);
  const dump = await measure(b, dumpFlow);
  await Promise.all([a.end(), b.end()]);

  console.log(`login flow, ${ROUNDS} rounds each, p50 per action:`);
  console.log(`${'action'.padEnd(8)} ${'locators'.padStart(10)} ${'dump+input'.padStart(12)}`);
  for (const k of ['launch', 'fill', 'click', 'read', 'flow']) {
    console.log(`${k.padEnd(8)} ${ms(p50(locators[k]!)).padStart(10)} ${ms(p50(dump[k]!)).padStart(12)}`);
  }
  const click = p50(locators.click!);
  const ratio = p50(dump.flow!) / p50(locators.flow!);
  console.log(`locator click p50 ${ms(click)} (goal <= 40 ms): ${click <= 40 ? 'met' : 'NOT met'}`);
  console.log(
    `whole flow ${ratio.toFixed(1)}x faster than the dump baseline (goal >= 5x): ${ratio >= 5 ? 'met' : 'NOT met'}`,
  );
} finally {
  await server.close();
}
