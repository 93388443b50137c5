/**
 * eta_seconds in a deployment follows the single server's queue model (server/runtime/rules.ts):
 * a session a host is booting is told what is left of that host's typical boot, and queued
 * sessions wait one typical boot more per session ahead of them for the host's one boot
 * slot, not a flat guess whatever their place in the queue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment } from '../support/deployment.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment eta tests: ${missing}`);

/** Long enough that no boot ends while the test reads the queue. */
const BOOT_S = 30;

describe.skipIf(missing !== null)('eta_seconds in a deployment', () => {
  let cluster: PostgresCluster;
  let d: Deployment | null = null;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it("plays the queue forward over the live hosts' boot slots", async () => {
    d = await Deployment.start(cluster, {
      nodes: 2,
      hosts: [['--phones', '4', '--boot-slots', '1', '--boot-ms', String(BOOT_S * 1000)]],
    });
    const account = await d.account(['--billing-mode', 'disabled', '--session-limit', '4']);
    const first = await d.api(0, account.key).post('/sessions', { body: { timeout_seconds: 300 } });
    // The host takes it into its only boot slot; the next two wait for that slot.
    for (let i = 0; i < 50; i++) {
      const r = await d.api(1, account.key).get(`/sessions/${first.body.id}`);
      if (r.body.location === 'booting') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const second = await d.api(1, account.key).post('/sessions', { body: { timeout_seconds: 300 } });
    const third = await d.api(0, account.key).post('/sessions', { body: { timeout_seconds: 300 } });
    expect([second.body.location, third.body.location]).toEqual(['queued', 'queued']);

    // One read shows all three as of the same moment.
    const list = (await d.api(1, account.key).get('/sessions')).body as Array<{
      id: string;
      location: string;
      eta_seconds: number;
    }>;
    const eta = (id: string) => list.find((s) => s.id === id)!;
    expect(eta(first.body.id).location).toBe('booting');
    const booting = eta(first.body.id).eta_seconds;
    expect(booting).toBeGreaterThan(0);
    expect(booting).toBeLessThanOrEqual(BOOT_S);
    // Each waits for the boot ahead of it, then boots for as long.
    expect(eta(second.body.id).eta_seconds).toBe(booting + BOOT_S);
    expect(eta(third.body.id).eta_seconds).toBe(booting + 2 * BOOT_S);
  });
});
