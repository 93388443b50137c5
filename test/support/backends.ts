/**
 * Device backends for runtime tests: the real virtual backend, with the one thing a test
 * needs changed on the device side of the interface (a phone whose shutdown is slow, as an
 * SDK emulator's can be).
 */
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { DeviceBackend, DevicePhone } from '../../server/devices/types.js';

/** Virtual phones whose shutdown takes `ms` (the cleanup stays pending that long). */
export function slowShutdownBackend(ms: number, bootMs = 20): DeviceBackend {
  const inner = createVirtualBackend({ bootMs });
  return {
    name: inner.name,
    typicalBootMs: inner.typicalBootMs,
    startupSource: inner.startupSource,
    close: () => inner.close(),
    async boot(request) {
      const phone = await inner.boot(request);
      const slow: DevicePhone = {
        label: phone.label,
        screen: phone.screen,
        adb: phone.adb,
        capture: () => phone.capture(),
        apps: () => phone.apps(),
        input: (event) => phone.input(event),
        onScreenChange: (listener) => phone.onScreenChange(listener),
        onLost: (listener) => phone.onLost(listener),
        async shutdown(options) {
          await new Promise((resolve) => setTimeout(resolve, ms));
          await phone.shutdown(options);
        },
      };
      return slow;
    },
  };
}

/** Virtual phones whose screen cannot be captured until `ready()` is called (a display that is not up yet). */
export function blankScreenBackend(bootMs = 20): { backend: DeviceBackend; ready(): void } {
  const inner = createVirtualBackend({ bootMs });
  let capturing = false;
  return {
    ready: () => {
      capturing = true;
    },
    backend: {
      name: inner.name,
      typicalBootMs: inner.typicalBootMs,
      startupSource: inner.startupSource,
      close: () => inner.close(),
      async boot(request) {
        const phone = await inner.boot(request);
        return {
          label: phone.label,
          screen: phone.screen,
          adb: phone.adb,
          capture: () => (capturing ? phone.capture() : Promise.reject(new Error('display not up yet'))),
          apps: () => phone.apps(),
          input: (event) => phone.input(event),
          onScreenChange: (listener) => phone.onScreenChange(listener),
          onLost: (listener) => phone.onLost(listener),
          shutdown: (options) => phone.shutdown(options),
        };
      },
    },
  };
}
