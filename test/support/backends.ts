/**
 * Device backends for runtime tests and benchmarks: the real virtual backend, with the one
 * thing a test needs changed on the device side of the interface (a phone whose shutdown is
 * slow, as an SDK emulator's can be; a display that is not up yet; phones remembered so a
 * test can look inside them).
 */
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { BootRequest, DeviceBackend, DevicePhone } from '../../server/devices/types.js';

/** A backend that boots through `inner` and passes each phone through `wrap`. */
export function wrapBackend(
  inner: DeviceBackend,
  wrap: (phone: DevicePhone, request: BootRequest) => DevicePhone,
): DeviceBackend {
  return {
    name: inner.name,
    typicalBootMs: inner.typicalBootMs,
    startupSource: inner.startupSource,
    close: () => inner.close(),
    boot: async (request) => wrap(await inner.boot(request), request),
  };
}

/** A phone that delegates everything to `phone` except the members given. */
export function delegatePhone(phone: DevicePhone, overrides: Partial<DevicePhone>): DevicePhone {
  return {
    label: phone.label,
    screen: phone.screen,
    adbEndpoint: () => phone.adbEndpoint(),
    capture: () => phone.capture(),
    apps: () => phone.apps(),
    input: (event) => phone.input(event),
    onScreenChange: (listener) => phone.onScreenChange(listener),
    onLost: (listener) => phone.onLost(listener),
    shutdown: (options) => phone.shutdown(options),
    ...overrides,
  };
}

/** Virtual phones whose shutdown takes `ms` (the cleanup stays pending that long). */
export function slowShutdownBackend(ms: number, bootMs = 20): DeviceBackend {
  return wrapBackend(createVirtualBackend({ bootMs }), (phone) =>
    delegatePhone(phone, {
      async shutdown(options) {
        await new Promise((resolve) => setTimeout(resolve, ms));
        await phone.shutdown(options);
      },
    }),
  );
}

/** Virtual phones whose screen cannot be captured until `ready()` is called (a display that is not up yet). */
export function blankScreenBackend(bootMs = 20): { backend: DeviceBackend; ready(): void } {
  let capturing = false;
  return {
    ready: () => {
      capturing = true;
    },
    backend: wrapBackend(createVirtualBackend({ bootMs }), (phone) =>
      delegatePhone(phone, {
        capture: () => (capturing ? phone.capture() : Promise.reject(new Error('display not up yet'))),
      }),
    ),
  };
}

/** The virtual backend, remembering each phone by the session it was booted for. */
export function recordingBackend(bootMs = 0): { backend: DeviceBackend; phones: Map<string, DevicePhone> } {
  const phones = new Map<string, DevicePhone>();
  return {
    phones,
    backend: wrapBackend(createVirtualBackend({ bootMs }), (phone, request) => {
      phones.set(request.sessionId, phone);
      return phone;
    }),
  };
}
