/**
 * Request keys of the runner integrations: the whole run identity is in the key, so two
 * CI builds whose ids share a long prefix never share a phone (the second would get 410).
 */
import { describe, expect, it } from 'vitest';
import { ciRunId, leaseRequestKey, testRequestKey } from '../../fixtures/shared/run.js';
import { isValidRequestKey } from '../../src/util/ids.js';

const JENKINS = 'https://ci.example.com/';
const TAG = 'jenkins-platform-mobile-android-regression-nightly-main-pipeline';

describe('lease request keys', () => {
  it('keeps Jenkins builds apart when their BUILD_TAGs differ only past the first 60 characters', () => {
    const a = ciRunId({ JENKINS_URL: JENKINS, BUILD_TAG: `${TAG}-1041` });
    const b = ciRunId({ JENKINS_URL: JENKINS, BUILD_TAG: `${TAG}-1042` });
    expect(a).not.toBe(b);
    // WebdriverIO: same worker, same spec, different builds.
    const keyA = leaseRequestKey('wdio', a!, ['0-0', 'specs/login.e2e.ts']);
    const keyB = leaseRequestKey('wdio', b!, ['0-0', 'specs/login.e2e.ts']);
    expect(keyA).not.toBe(keyB);
    expect(isValidRequestKey(keyA)).toBe(true);
    expect(isValidRequestKey(keyB)).toBe(true);
  });

  it('keeps run ids that differ only past the readable head apart', () => {
    const long = 'x'.repeat(50);
    const keyA = leaseRequestKey('wdio', `${long}-a`, ['0-0']);
    const keyB = leaseRequestKey('wdio', `${long}-b`, ['0-0']);
    expect(keyA.slice(0, 45)).toBe(keyB.slice(0, 45));
    expect(keyA).not.toBe(keyB);
  });

  it('is stable for one attempt and new for a retry (Playwright)', () => {
    const parts = { runId: 'run1', project: 'android', testId: 't1', retry: 0, repeatEachIndex: 0 };
    expect(testRequestKey(parts)).toBe(testRequestKey({ ...parts }));
    expect(testRequestKey({ ...parts, retry: 1 })).not.toBe(testRequestKey(parts));
    expect(isValidRequestKey(testRequestKey(parts))).toBe(true);
  });
});
