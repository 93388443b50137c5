import { defineConfig } from 'vitest/config';
import { postgresMissing } from './test/support/postgres.js';

/**
 * Server contract tests that speak only HTTP and ADB (test/support/target.ts): they run
 * once against the single-process server and once more against a deployment (PostgreSQL,
 * 2 API nodes, 2 device hosts), with each request sent to the next API node in turn.
 */
export const SHARED_CONTRACT_FILES = [
  'test/server/sessions-create.test.ts',
  'test/server/lifecycle.test.ts',
  'test/server/profile.test.ts',
  'test/server/billing.test.ts',
  'test/server/http-refusals.test.ts',
  'test/server/access.test.ts',
  'test/server/history.test.ts',
  'test/server/adb-gateway.test.ts',
  'test/server/accounts.test.ts',
];

const missing = postgresMissing();
if (missing) console.warn(`not running the server contract tests against a deployment: ${missing}`);

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // Contract and e2e tests start real servers, phones and runners; give them room on a
    // shared 2-core machine. Timings are measured in bench/, never asserted here.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'single-process', include: ['test/**/*.test.ts'] } },
      ...(missing === null
        ? [
            {
              extends: true as const,
              test: {
                name: 'deployment',
                include: SHARED_CONTRACT_FILES,
                env: { PHONELEASE_TEST_TARGET: 'deployment' },
              },
            },
          ]
        : []),
    ],
  },
});
