import { defineConfig } from '@playwright/test';
import type { PhoneleaseTestOptions, PhoneleaseWorkerOptions } from 'phonelease/playwright';

/**
 * The example suite. With no PHONELEASE_BASE_URL it runs on an embedded phonelease server
 * with virtual phones; set PHONELEASE_BASE_URL and PHONELEASE_API_KEY to use a shared one.
 */
export default defineConfig<PhoneleaseTestOptions, PhoneleaseWorkerOptions>({
  testDir: './specs',
  outputDir: './test-results',
  timeout: 60_000,
  workers: 2,
  fullyParallel: true,
  retries: process.env.CI ? 1 : 0,
  // Ends any phone a crashed worker could not end (see docs/playwright.md).
  globalTeardown: './global-teardown.ts',
  reporter: [['list'], ['html', { open: 'never', outputFolder: './playwright-report' }]],
  use: {
    // What to attach when a test fails (these are the defaults).
    phoneOptions: { attachScreenshot: 'on-failure', attachLogcat: 'on-failure' },
    // The embedded server's virtual phones (used when PHONELEASE_BASE_URL is not set).
    phoneleaseServer: { phones: 8, bootMs: 500 },
  },
});
