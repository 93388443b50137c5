/** Maps ADB stream destinations (`shell:`, `exec:`, `sync:`, `tcp:` ...) to services. */
import type { Device } from '../device.js';
import type { ServiceHandler, ServiceResolver } from './connection.js';

export function createServiceResolver(device: Device): ServiceResolver {
  return (destination: string): ServiceHandler | null => {
    const tcp = /^tcp:(?:(?:localhost|127\.0\.0\.1):)?(\d+)$/.exec(destination);
    if (tcp) {
      const handler = device.ports.get(Number(tcp[1]));
      if (!handler) return null;
      return (stream) => handler(stream);
    }
    device.log.debug('virtual adb: unsupported service', { destination });
    return null;
  };
}
