/** How a backend runs its phones' browsers: which Chromium, and the user agent it presents. */
import { execFile } from 'node:child_process';
import { DEVICE } from '../identity.js';
import type { BrowserConfig } from './browser-app.js';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** Chrome for Android's user agent (reduced form: only the major version is real). */
export function mobileUserAgent(major: number): string {
  return `Mozilla/5.0 (Linux; Android ${DEVICE.release}; ${DEVICE.model}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Mobile Safari/537.36`;
}

/**
 * A browser configuration for `executable`. The Chromium version is asked once, on the
 * first browser start, and shared by every phone of the backend.
 */
export function browserConfig(executable: string = DEFAULT_CHROMIUM): BrowserConfig {
  let userAgent: Promise<string> | null = null;
  return {
    executable,
    userAgent() {
      userAgent ??= new Promise((resolve) => {
        execFile(executable, ['--version'], { timeout: 10_000 }, (error, stdout) => {
          const major = /(\d+)\.\d+\.\d+/.exec(error ? '' : stdout)?.[1];
          // Without a version the page still sees a mobile Chrome, just not this one's number.
          resolve(mobileUserAgent(major ? Number(major) : 120));
        });
      });
      return userAgent;
    },
  };
}
