/**
 * The options both runners share: one set of defaults, one useSeconds rule, and the old
 * WebdriverIO names still working (with the warning the launcher prints once per run).
 */
import { describe, expect, it } from 'vitest';
import { PHONE_DEFAULTS } from '../../fixtures/playwright.js';
import { SHARED_PHONE_DEFAULTS, renameWarnings, useSecondsFor } from '../../fixtures/shared/options.js';
import { renamedOptions, resolveOptions } from '../../fixtures/wdio/options.js';

const SHARED_KEYS = Object.keys(SHARED_PHONE_DEFAULTS) as Array<keyof typeof SHARED_PHONE_DEFAULTS>;

describe('fixture options', () => {
  it('resolves the same phone defaults under Playwright and WebdriverIO', () => {
    const wdio = resolveOptions({});
    const pick = (o: Record<string, unknown>) => Object.fromEntries(SHARED_KEYS.map((k) => [k, o[k]]));
    expect(pick({ ...PHONE_DEFAULTS })).toEqual(pick({ ...wdio }));
    expect(pick({ ...wdio })).toEqual({
      profile: false,
      startTimeoutMs: 180_000,
      useSeconds: undefined,
      progress: true,
      attachScreenshot: 'on-failure',
      attachUiTree: 'on-failure',
      attachLogcat: 'on-failure',
      apps: [],
      grantPermissions: true,
    });
  });

  it('derives useSeconds from the one test a phone serves, else 30 minutes, unless set', () => {
    expect(useSecondsFor(undefined, 30_000)).toBe(90);
    expect(useSecondsFor(undefined, 30_500)).toBe(91);
    // No timeout (0) or a phone that serves several tests (undefined): no test bounds it.
    expect(useSecondsFor(undefined, 0)).toBe(1800);
    expect(useSecondsFor(undefined, undefined)).toBe(1800);
    expect(useSecondsFor(600, 30_000)).toBe(600);
  });

  it("keeps WebdriverIO's old option names working and names their new ones", () => {
    const old = { screenshotOnFailure: false, screenshotDir: 'shots', embedded: { phones: 2 } };
    const resolved = resolveOptions(old);
    expect(resolved.attachScreenshot).toBe('off');
    expect(resolved.evidenceDir).toBe('shots');
    // As set: the embedded server fills in the rest (for emulators, from the host).
    expect(resolved.phoneleaseServer).toEqual({ phones: 2 });
    expect(renamedOptions(old).map((r) => r.old)).toEqual([
      'screenshotOnFailure',
      'screenshotDir',
      'embedded',
    ]);
    expect(renameWarnings(renamedOptions({ embedded: {} }))).toEqual([
      'warning: the option `embedded` is now `phoneleaseServer`; the old name stops working in the next minor version.',
    ]);
    expect(resolveOptions({ screenshotOnFailure: true }).attachScreenshot).toBe('on-failure');
  });

  it('lets the new name win when a config sets both', () => {
    const resolved = resolveOptions({
      screenshotOnFailure: false,
      attachScreenshot: 'always',
      screenshotDir: 'old',
      evidenceDir: 'new',
      embedded: { phones: 2, bootMs: 10 },
      phoneleaseServer: { phones: 3 },
    });
    expect(resolved.attachScreenshot).toBe('always');
    expect(resolved.evidenceDir).toBe('new');
    expect(resolved.phoneleaseServer).toEqual({ phones: 3, bootMs: 10 });
    expect(renamedOptions({ attachScreenshot: 'off', evidenceDir: 'x' })).toEqual([]);
  });
});
