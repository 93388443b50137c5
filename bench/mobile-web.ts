/**
 * Mobile web: how long until a test has its phone page, how fast actions on it are against a
 * desktop Chromium page in the same run, and what a phone with its browser open costs.
 *
 * - first page: lease start -> ready, and ready -> a Page in the phone's Chrome (launchBrowser
 *   + newPage, Chrome started cold by it).
 * - actions: goto + click + waiting for the result, on a page served locally (through
 *   reverse on the phone), median of --rounds, against the same on a desktop page; desktop
 *   and phone rounds alternate, so a load that comes and goes weighs on both alike.
 * - DevTools round trip: one page.evaluate, median, phone against desktop (what every action
 *   pays per command; the ADB tunnel's share of the actions' time).
 * - the same actions and round trip on the phone's Chromium reached directly (its DevTools
 *   port on the server machine, no ADB): what is left of the gap without the ADB path, so a
 *   change can be told apart as the tunnel's or the phone browser's.
 * - memory: proportional set size (PSS) of the phone's Chromium process group.
 *
 * Goals: first page within 2 s of the phone being ready; actions within 1.5x of desktop.
 * Run: npx tsx bench/mobile-web.ts [--phones 3] [--rounds 15]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import { startServer } from '../server/main.js';
import { leasePhone } from '../src/index.js';

const { values } = parseArgs({
  options: { phones: { type: 'string', default: '3' }, rounds: { type: 'string', default: '15' } },
});
const phones = Number(values.phones);
const rounds = Number(values.rounds);

const PAGE = `<!doctype html><meta name="viewport" content="width=device-width"><title>Shop</title>
<h1>Shop</h1><button onclick="document.querySelector('output').textContent='Thank you'">Buy</button><output></output>`;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number): string => `${x.toFixed(0)} ms`;

/** goto + click + the result visible: one round, in ms. */
async function roundTrip(page: Page, url: string): Promise<number> {
  const t0 = performance.now();
  await page.goto(url);
  await page.getByRole('button', { name: 'Buy' }).click();
  await page.getByText('Thank you').waitFor({ state: 'visible' });
  return performance.now() - t0;
}

/** One DevTools command and its answer (page.evaluate of a constant), median of 20, in ms. */
async function roundTripCdp(page: Page): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await page.evaluate('1');
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** The DevTools port of the Chromium with this pid (DevToolsActivePort in its profile). */
function devToolsPort(pid: number): number {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const profile = args.find((a) => a.startsWith('--user-data-dir='))!.slice('--user-data-dir='.length);
  return Number(readFileSync(`${profile}/DevToolsActivePort`, 'utf8').split('\n')[0]);
}

/** PSS in MiB of every process in the group led by pid (Chromium's browser, renderers, GPU, zygotes). */
function groupPssMiB(pgid: number): number {
  let kib = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      const rollup = readFileSync(`/proc/${entry}/smaps_rollup`, 'utf8');
      kib += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // The process ended while we looked.
    }
  }
  return kib / 1024;
}

async function main(): Promise<void> {
  const site = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', () => resolve()));
  const port = (site.address() as AddressInfo).port;
  const server = await startServer({ bootMs: 500, log: 'warn', phones: phones + 1 });
  const { key } = server.createAccount({ billingMode: 'disabled', sessionLimit: phones + 1 });

  // Desktop baseline, same machine, same Chromium binary. Its rounds alternate with the
  // phone's below, so both see the same load from whatever else runs on the machine.
  const desktop = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const desktopPage = await desktop.newPage();
  const desktopUrl = `http://127.0.0.1:${port}/`;
  await roundTrip(desktopPage, desktopUrl); // warm-up
  const desktopTimes: number[] = [];
  const desktopCdp: number[] = [];

  const toReady: number[] = [];
  const toPage: number[] = [];
  const phoneTimes: number[] = [];
  const pss: number[] = [];
  const phoneCdp: number[] = [];
  const directTimes: number[] = [];
  const directDesktop: number[] = [];
  const directCdp: number[] = [];
  for (let n = 0; n < phones; n++) {
    const t0 = performance.now();
    const phone = await leasePhone({ baseUrl: server.url, apiKey: key, reaper: false, ledger: false });
    const tReady = performance.now();
    const context = await phone.launchBrowser();
    const page = await context.newPage();
    const tPage = performance.now();
    toReady.push(tReady - t0);
    toPage.push(tPage - tReady);
    await phone.reverse(port);
    await roundTrip(page, `http://localhost:${port}/`); // warm-up, like the desktop page
    const cdp = await context.browser()!.newBrowserCDPSession();
    const info = (await cdp.send('SystemInfo.getProcessInfo')) as {
      processInfo: { type: string; id: number }[];
    };
    const pid = info.processInfo.find((p) => p.type === 'browser')?.id;
    for (let i = 0; i < rounds; i++) {
      desktopTimes.push(await roundTrip(desktopPage, desktopUrl));
      phoneTimes.push(await roundTrip(page, `http://localhost:${port}/`));
    }
    desktopCdp.push(await roundTripCdp(desktopPage));
    phoneCdp.push(await roundTripCdp(page));
    if (pid) pss.push(groupPssMiB(pid));
    // The same Chromium without the ADB path (its DevTools port, from its profile), once the
    // tunnel's Playwright has let go: a second client would get every event of every tab too.
    await context.browser()!.close();
    if (pid) {
      const direct = await chromium.connectOverCDP(`http://127.0.0.1:${devToolsPort(pid)}`);
      const directPage = await direct.contexts()[0]!.newPage();
      await roundTrip(directPage, `http://localhost:${port}/`);
      for (let i = 0; i < rounds; i++) {
        directDesktop.push(await roundTrip(desktopPage, desktopUrl));
        directTimes.push(await roundTrip(directPage, `http://localhost:${port}/`));
      }
      directCdp.push(await roundTripCdp(directPage));
      await direct.close();
    }
    await phone.end();
  }
  await desktop.close();
  await server.close();
  site.close();

  const desktopMedian = median(desktopTimes);
  const phoneMedian = median(phoneTimes);
  console.log(`phones: ${phones}, rounds per page: ${rounds}`);
  console.log(`lease start -> ready: median ${ms(median(toReady))} (virtual boot 500 ms)`);
  console.log(
    `ready -> first phonePage: median ${ms(median(toPage))}, max ${ms(Math.max(...toPage))} (goal <= 2000 ms)`,
  );
  console.log(`lease start -> first phonePage: median ${ms(median(toReady) + median(toPage))}`);
  console.log(`goto+click+assert, desktop page: median ${ms(desktopMedian)}`);
  console.log(
    `goto+click+assert, phone page:   median ${ms(phoneMedian)} (ratio ${(phoneMedian / desktopMedian).toFixed(2)}x, goal <= 1.5x)`,
  );
  if (directTimes.length)
    console.log(
      `goto+click+assert, phone's Chromium without ADB: median ${ms(median(directTimes))} (ratio ${(median(directTimes) / median(directDesktop)).toFixed(2)}x to desktop rounds run alongside: the phone browser's share)`,
    );
  console.log(
    `DevTools round trip (page.evaluate): desktop ${median(desktopCdp).toFixed(1)} ms, phone ${median(phoneCdp).toFixed(1)} ms` +
      (directCdp.length ? `, phone's Chromium without ADB ${median(directCdp).toFixed(1)} ms` : ''),
  );
  if (pss.length)
    console.log(
      `memory per phone with the browser open (Chromium group PSS): median ${median(pss).toFixed(0)} MiB`,
    );
}

await main();
