/**
 * Mobile web: does the site work in Chrome on Android? The page is served by the test
 * itself; phone.reverse() makes the phone's localhost:PORT this machine's server, and
 * phonePage runs in the phone's Chrome.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, expect } from 'phonelease/playwright';

const SHOP = `<!doctype html>
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Shop</title>
<h1>Phone case</h1>
<button onclick="document.querySelector('output').textContent = 'Thank you for your order'">Buy</button>
<output></output>`;

// The embedded server's virtual phone runs its Chrome on this machine's Chromium; a shared
// service (PHONELEASE_BASE_URL) brings its own phones and browsers.
const chromium = process.env.PHONELEASE_CHROMIUM ?? '/usr/bin/chromium';
test.skip(
  !process.env.PHONELEASE_BASE_URL && !existsSync(chromium),
  `No Chromium at ${chromium} for the virtual phone's Chrome: install Debian's chromium (apt-get install chromium) or set PHONELEASE_CHROMIUM.`,
);

let server: Server;
let port: number;

test.beforeAll(async () => {
  server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(SHOP);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
});

test.afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

test('checkout works on a phone', async ({ phone, phonePage }) => {
  await phone.reverse(port); // the phone's localhost:PORT is this machine's localhost:PORT
  await phonePage.goto(`http://localhost:${port}/`);
  await phonePage.getByRole('button', { name: 'Buy' }).click();
  await expect(phonePage.getByText('Thank you')).toBeVisible();
  // A phone-sized viewport: the layout a Pixel 8 shows.
  expect(await phonePage.evaluate(() => innerWidth)).toBe(360);
});
