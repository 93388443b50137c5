/**
 * Debian's Chromium through playwright-core (the Playwright browser download cannot work
 * on these machines). Flags keep it off the network it cannot reach.
 */
import { chromium, type Browser, type Page } from 'playwright-core';

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

/** Opens a viewer URL in a desktop-sized page and waits until the phone's first frame shows. */
export async function openViewer(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url);
  await page.waitForFunction(
    () => (document.getElementById('screen') as HTMLImageElement).naturalWidth > 0,
    undefined,
    { timeout: 15_000 },
  );
  return page;
}
