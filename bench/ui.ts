/**
 * UI automation on the virtual phone: the login flow with locators (the UiAutomator2
 * server over the lease's ADB) against the same flow with `uiautomator dump` + `input`
 * (what the Playwright example did before locators), in the same run on phones of the
 * same server. Per-action p50, the whole flow, and where the time goes: how many round
 * trips each action makes (ADB shells, UI server requests) and what one of each costs.
 *
 * The two flows run in alternate rounds, so load from elsewhere on the machine falls on
 * both alike. Resetting the app between rounds (`am force-stop`) is the same for both and
 * not part of the flow, so it is timed apart.
 *
 * Goals: locator click p50 <= 40 ms; the whole flow >= 5x faster than the dump baseline.
 *
 * Reading the ratio: the virtual phone answers `input` as fast as `shell true`, and
 * `uiautomator dump` as AOSP's DumpCommand does: only after the screen has gone a whole
 * second without a change (waitForIdle(1000, 10000), on a new UiAutomation connection that
 * has seen no event yet), so every dump costs at least a second, on a device as here. A
 * device also starts a Java process for each dump and each `input`, which the virtual
 * phone does not model, so the baseline here is the fastest a device could be. The
 * locator engine reads through the UiAutomator2 server, which answers at once (the engine
 * sets its waitForIdleTimeout to 0 and checks stability itself, per element). The last
 * line prints what one round trip of each kind costs.
 *
 * Run: npm run build && node --import tsx bench/ui.ts [rounds]
 */
import { leasePhone, type Lease } from '../src/index.js';
import { uiEngineOf } from '../src/lease/lease.js';
import type { UiDriver } from '../src/ui/driver.js';
import { parseHierarchy, centre, textOf, type UiNode } from '../src/ui/tree.js';
import { startServer } from '../server/main.js';

const ROUNDS = Number(process.argv[2] ?? 15);
const APP = 'com.phonelease.login';
const ACTIONS = ['launch', 'fill', 'click', 'expect', 'flow'] as const;
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(1)} ms`;

type Timings = Record<string, number[]>;

/** Round trips to the phone, counted per action (to show where the time goes). */
interface Trips {
  shells: number;
  requests: number;
}
type TripLog = Record<string, Trips>;

let tripsOf: Trips = { shells: 0, requests: 0 };
/** `uiautomator dump` calls the dump flow has made, over all its rounds. */
let dumpsInFlow = 0;

async function timed<T>(into: Timings, trips: TripLog, name: string, body: () => Promise<T>): Promise<T> {
  const before = { ...tripsOf };
  const t0 = performance.now();
  const value = await body();
  (into[name] ??= []).push(performance.now() - t0);
  const t = (trips[name] ??= { shells: 0, requests: 0 });
  t.shells += tripsOf.shells - before.shells;
  t.requests += tripsOf.requests - before.requests;
  return value;
}

/**
 * Counts the UI engine's shells and its UI server's requests. The engine reaches the phone
 * only through its channel's shell() and its driver, so wrapping those two sees every
 * round trip.
 */
async function countTrips(phone: Lease): Promise<void> {
  const channel = uiEngineOf(phone).phone;
  const shell = channel.shell.bind(channel);
  channel.shell = (command) => {
    tripsOf.shells++;
    return shell(command);
  };
  const driver: UiDriver = await uiEngineOf(phone).driver();
  // One HTTP request each, except replaceText: the focused element, then its value.
  const requestsPerCall: Partial<Record<keyof UiDriver, number>> = {
    source: 1,
    tap: 1,
    longPress: 1,
    swipe: 1,
    key: 1,
    replaceText: 2,
  };
  for (const [name, n] of Object.entries(requestsPerCall) as Array<[keyof UiDriver, number]>) {
    const method = driver[name] as (...args: unknown[]) => Promise<unknown>;
    Object.assign(driver, {
      [name]: (...args: unknown[]) => {
        tripsOf.requests += n;
        return method.apply(driver, args);
      },
    });
  }
}

/** The flow with locators: every step auto-waits and checks actionability. */
async function locatorFlow(phone: Lease, t: Timings, trips: TripLog): Promise<void> {
  await timed(t, trips, 'launch', () => phone.launch(APP));
  await timed(t, trips, 'fill', () => phone.getById('username').fill('demo'));
  await timed(t, trips, 'fill', () => phone.getByDesc('password').fill('secret'));
  await timed(t, trips, 'click', () => phone.getByText('Log in').click());
  // What `await expect(phone.getById('result')).toHaveText('Welcome, demo!')` runs, without
  // the test.step that needs a Playwright test around it.
  const result = phone.getById('result');
  const outcome = await timed(t, trips, 'expect', () =>
    result._expect(5000, false, (found, snap) => {
      const n = result._single(found, snap);
      const text = n ? textOf(n) : '';
      return { pass: text === 'Welcome, demo!', received: JSON.stringify(text) };
    }),
  );
  if (!outcome.pass) throw new Error(`locator flow ended with ${outcome.received}`);
}

/**
 * The baseline, as examples/playwright/support/screen.ts did it before locators: dump
 * the tree to a file and cat it, find the node by id, tap its centre, type with
 * `input text`. No waiting beyond what `am start -W` does.
 */
async function dumpFlow(phone: Lease, t: Timings, trips: TripLog): Promise<void> {
  const shell = (command: string) => {
    tripsOf.shells++;
    return phone.shell(command);
  };
  const find = async (id: string): Promise<UiNode> => {
    dumpsInFlow++;
    const r = await shell(
      'uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml',
    );
    const node = parseHierarchy(r.stdout.slice(r.stdout.indexOf('<'))).nodes.find(
      (n) => n.resourceId === `${APP}:id/${id}`,
    );
    if (!node) throw new Error(`no ${id} on screen`);
    return node;
  };
  const tap = async (id: string) => {
    const { x, y } = centre((await find(id)).bounds);
    await shell(`input tap ${x} ${y}`);
  };
  await timed(t, trips, 'launch', () => shell(`am start -W -n ${APP}/.LoginActivity`));
  await timed(t, trips, 'fill', async () => {
    await tap('username');
    await shell(`input text demo`);
  });
  await timed(t, trips, 'fill', async () => {
    await tap('password');
    await shell(`input text secret`);
  });
  await timed(t, trips, 'click', () => tap('login'));
  const text = await timed(t, trips, 'expect', async () => (await find('result')).text);
  if (text !== 'Welcome, demo!') throw new Error(`dump flow ended with ${JSON.stringify(text)}`);
}

interface Method {
  phone: Lease;
  flow: (p: Lease, t: Timings, trips: TripLog) => Promise<void>;
  t: Timings;
  trips: TripLog;
}

async function round(m: Method, counted: boolean): Promise<void> {
  const t: Timings = counted ? m.t : {};
  const trips: TripLog = counted ? m.trips : {};
  await timed(t, {}, 'reset', () => m.phone.shell(`am force-stop ${APP}`));
  await timed(t, trips, 'flow', () => m.flow(m.phone, t, trips));
}

/** p50 of `n` runs of `body`, for the cost of one round trip of each kind. */
async function unitCost(n: number, body: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await body();
    xs.push(performance.now() - t0);
  }
  return p50(xs);
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
  await countTrips(a);
  const locators: Method = { phone: a, flow: locatorFlow, t: {}, trips: {} };
  const dump: Method = { phone: b, flow: dumpFlow, t: {}, trips: {} };
  // One round each first, not counted: starts the UI server and warms both paths.
  await round(locators, false);
  await round(dump, false);
  for (let i = 0; i < ROUNDS; i++) {
    await round(locators, true);
    await round(dump, true);
  }
  tripsOf = { shells: 0, requests: 0 };
  const driver = await uiEngineOf(a).driver();
  const costs = {
    shell: await unitCost(ROUNDS * 2, () => b.shell('true')),
    // Each dump waits a quiet second: a few are enough for a p50.
    dump: await unitCost(5, () =>
      b.shell('uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml'),
    ),
    input: await unitCost(ROUNDS * 2, () => b.shell('input keyevent 0')),
    source: await unitCost(ROUNDS * 2, () => driver.source()),
    key: await unitCost(ROUNDS * 2, () => driver.key(0)),
  };
  await Promise.all([a.end(), b.end()]);

  const perRound = (m: Method, k: string) => {
    const trips = m.trips[k];
    const times = k === 'fill' ? ROUNDS * 2 : ROUNDS;
    if (!trips) return '';
    const f = (x: number) => String(Math.round((x / times) * 10) / 10);
    return `${f(trips.shells)} sh + ${f(trips.requests)} rq`;
  };
  console.log(`login flow, ${ROUNDS} rounds each (alternating), p50 per action, round trips per action:`);
  console.log(
    `${'action'.padEnd(8)} ${'locators'.padStart(10)} ${''.padStart(14)} ${'dump+input'.padStart(12)} ${''.padStart(14)}`,
  );
  for (const k of ACTIONS) {
    console.log(
      `${k.padEnd(8)} ${ms(p50(locators.t[k]!)).padStart(10)} ${perRound(locators, k).padStart(14)} ${ms(p50(dump.t[k]!)).padStart(12)} ${perRound(dump, k).padStart(14)}`,
    );
  }
  console.log(
    `reset    ${ms(p50(locators.t.reset!)).padStart(10)} ${''.padStart(14)} ${ms(p50(dump.t.reset!)).padStart(12)}   (am force-stop between rounds, not in the flow)`,
  );
  console.log(
    `one round trip, p50: shell \`true\` ${ms(costs.shell)}, uiautomator dump ${ms(costs.dump)}, input keyevent ${ms(costs.input)}; ` +
      `UI server GET /source ${ms(costs.source)}, press_keycode ${ms(costs.key)}`,
  );
  const click = p50(locators.t.click!);
  const ratio = p50(dump.t.flow!) / p50(locators.t.flow!);
  console.log(`locator click p50 ${ms(click)} (goal <= 40 ms): ${click <= 40 ? 'met' : 'NOT met'}`);
  console.log(
    `whole flow ${ratio.toFixed(1)}x faster than the dump baseline (goal >= 5x): ${ratio >= 5 ? 'met' : 'NOT met'}`,
  );
  // Where the baseline's time goes: take away each dump's wait for a quiet screen (what a
  // dump costs beyond a plain shell) and what is left is its round trips alone.
  const dumps = dumpsInFlow / (ROUNDS + 1);
  const roundTripsOnly = p50(dump.t.flow!) - dumps * (costs.dump - costs.shell);
  console.log(
    `the baseline makes ${dumps} dumps per flow; without their wait for a quiet second it would take ${ms(roundTripsOnly)}, ` +
      `${(roundTripsOnly / p50(locators.t.flow!)).toFixed(1)}x the locator flow`,
  );
} finally {
  await server.close();
}
