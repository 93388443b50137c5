/**
 * Dead code and unused dependencies: `npx knip` (run by `npm test`). The entry points are the
 * package's real ones (the exports and bin of package.json, in their TypeScript sources), the
 * programs spawned by file path, the benchmarks, the examples and the tests.
 */
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  entry: [
    'src/index.ts',
    'src/cli/main.ts',
    'fixtures/playwright.ts',
    'fixtures/playwright-teardown.ts',
    'fixtures/wdio/index.ts',
    'server/index.ts',
    // Started as their own processes or worker threads, by path.
    'src/crash/reaper-main.ts',
    'fixtures/shared/embedded-main.ts',
    'server/devices/virtual/video/encoder-worker.ts',
    'bench/*.ts',
    'examples/playwright/playwright.config.ts',
    // Named by path in that config's globalTeardown.
    'examples/playwright/global-teardown.ts',
    'examples/playwright/specs/**/*.ts',
    'examples/wdio/wdio.conf.ts',
    'examples/wdio/specs/**/*.ts',
    'test/**/*.test.ts',
  ],
  project: ['{src,fixtures,server,bench,examples}/**/*.ts', 'test/**/*.{ts,mjs}'],
  // A constant exported and used in its own file documents a format; unused elsewhere is fine.
  ignoreExportsUsedInFile: true,
  ignoreDependencies: [
    // The WebdriverIO runner loads these by short name ('local', 'spec', 'appium') from the
    // example's config and the tests' generated ones.
    '@wdio/cli',
    '@wdio/local-runner',
    '@wdio/spec-reporter',
    '@wdio/appium-service',
    // Installed with webdriverio and appium-uiautomator2-driver, which the tests use.
    '@wdio/globals',
    'io.appium.settings',
  ],
  // Debian's programs, installed by test/support/ensure-system.mjs.
  ignoreBinaries: ['adb', 'apt-get'],
  // WebdriverIO loads a service by its default export; the named one is for typed imports.
  ignoreIssues: { 'fixtures/wdio/index.ts': ['duplicates'] },
};

export default config;
