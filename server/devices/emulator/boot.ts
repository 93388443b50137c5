/**
 * Boot detection by Appium's rule (reference, "Boot detection"): sys.boot_completed is 1,
 * the boot animation has stopped (or never ran), and `service list` includes the activity,
 * package and window services. The property alone is not enough: a snapshot restore comes
 * back with it already 1 while the framework is still coming up.
 *
 * A cold boot comes up behind the keyguard; CI runners dismiss it with `input keyevent 82`
 * (MENU, which dismisses the swipe keyguard an AVD has) once the phone has booted. A phone
 * loaded from a snapshot shows what was saved, so a golden saved after the dismissal starts
 * unlocked, and a phone restored with an app in front must not get a stray MENU key.
 */
import { runTool, type Sdk } from './sdk.js';

export const REQUIRED_SERVICES = ['activity', 'package', 'window'] as const;
const PROBE = 'getprop sys.boot_completed; getprop init.svc.bootanim; service list';

export interface BootProbe {
  bootCompleted: boolean;
  bootAnimationStopped: boolean;
  missingServices: string[];
}

export function parseBootProbe(stdout: string): BootProbe {
  const [completed = '', anim = '', ...services] = stdout.split('\n').map((l) => l.trim());
  const listed = services.join('\n');
  return {
    bootCompleted: completed === '1',
    bootAnimationStopped: anim === '' || anim === 'stopped',
    missingServices: REQUIRED_SERVICES.filter((s) => !new RegExp(`^\\d+\\s+${s}:`, 'm').test(listed)),
  };
}

export function booted(p: BootProbe): boolean {
  return p.bootCompleted && p.bootAnimationStopped && p.missingServices.length === 0;
}

/**
 * Polls the phone through the adb server until it has booted. Resolves when it has;
 * rejects when `signal` aborts (the session ended, the process died, the deadline passed).
 */
export async function waitForBoot(
  sdk: Sdk,
  serial: string,
  signal: AbortSignal,
  intervalMs = 250,
): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    try {
      // `offline` until the guest's adbd answers: the shell fails and we poll again.
      const { stdout } = await runTool(sdk.adb, ['-s', serial, 'shell', PROBE], sdk.env, {
        timeoutMs: 10_000,
        signal,
      });
      if (booted(parseBootProbe(stdout))) return;
    } catch (error) {
      signal.throwIfAborted();
      void error; // not reachable yet
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, intervalMs);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** Dismisses the keyguard of a phone that has just cold-booted (as AER does). */
export async function dismissKeyguard(sdk: Sdk, serial: string): Promise<void> {
  await runTool(sdk.adb, ['-s', serial, 'shell', 'input keyevent 82'], sdk.env, { timeoutMs: 30_000 });
}
