import PhoneleaseService from 'phonelease/wdio';

/**
 * The example WebdriverIO suite: Appium's UiAutomator2 driver against a disposable phone
 * per spec file. With no PHONELEASE_BASE_URL the service starts an embedded phonelease
 * server with virtual phones; @wdio/appium-service starts Appium on a free port.
 *
 *   npx wdio run examples/wdio/wdio.conf.ts
 */
export const config: WebdriverIO.Config = {
  runner: 'local',
  specs: ['./specs/**/*.e2e.ts'],
  maxInstances: 2,
  capabilities: [{ platformName: 'Android', 'appium:automationName': 'UiAutomator2' }],
  services: [
    // phonelease first: it leases the phone and fills in udid, systemPort and adbPort.
    [PhoneleaseService, { scope: 'session', attachScreenshot: 'on-failure' }],
    ['appium', { args: { address: '127.0.0.1' }, logPath: './test-results' }],
  ],
  framework: 'mocha',
  mochaOpts: { ui: 'bdd', timeout: 120_000 },
  reporters: ['spec'],
  outputDir: './test-results',
  logLevel: 'warn',
  waitforTimeout: 10_000,
  connectionRetryCount: 1,
};
