/**
 * Debian's Chromium through playwright-core (the Playwright browser download cannot work
 * on these machines). Flags keep it off the network it cannot reach.
 */
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.PHONELEASE_CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}
