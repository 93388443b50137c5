/**
 * Request keys of the runner integrations: the whole run identity is in the key, so two
 * CI builds whose ids share a long prefix never share a phone (the second would get 410).
 */
import { describe, expect, it } from 'vitest';
import { ciRunId, leaseRequestKey } from '../../fixtures/shared/run.js';
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
    // The fixture's parts: project, test id, retry, repeat index.
    const key = (retry: number) => leaseRequestKey('pw', 'run1', ['android', 't1', retry, 0]);
    expect(key(0)).toBe(key(0));
    expect(key(1)).not.toBe(key(0));
    expect(isValidRequestKey(key(0))).toBe(true);
  });
});
