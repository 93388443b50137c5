/** Maps ADB stream destinations (`shell:`, `exec:`, `sync:`, `tcp:` ...) to services. */
import type { Duplex } from 'node:stream';
import type { Device } from '../device.js';
import { SHELL_CREDENTIALS } from '../fs.js';
import type { CommandTable } from '../shell/command.js';
import type { DeviceTransport, ServiceHandler, ServiceResolver } from './connection.js';
import { relay } from '../../../../src/util/relay.js';
import { ADBD_UID } from '../network.js';
import { runFramebufferService } from './framebuffer.js';
import { runReverseService } from './reverse.js';
import { runBinderService, runShellService } from './shell-service.js';
import { runSyncService } from './sync.js';

export function createServiceResolver(device: Device, commands: CommandTable): ServiceResolver {
  const shellOptions = { device, commands };
  return (destination: string, transport: DeviceTransport): ServiceHandler | null => {
    if (
      destination.startsWith('shell:') ||
      destination.startsWith('shell,') ||
      destination.startsWith('exec:')
    ) {
      return (stream) => runShellService(stream, shellOptions, destination);
    }
    if (destination.startsWith('abb:') || destination.startsWith('abb_exec:')) {
      return (stream) => runBinderService(stream, shellOptions, destination);
    }
    if (destination === 'framebuffer:') return (stream) => runFramebufferService(stream, device);
    if (destination === 'sync:') {
      return (stream) => runSyncService(stream, { fs: device.fs.as(SHELL_CREDENTIALS), log: device.log });
    }
    const tcp = /^tcp:(?:(?:localhost|127\.0\.0\.1):)?(\d+)$/.exec(destination);
    if (tcp) {
      const port = Number(tcp[1]);
      if (!device.network.isListening(port)) return null;
      // adbd connects as a client on the phone's loopback, as the shell user.
      return (stream) => {
        if (!device.network.accept(port, stream, ADBD_UID)) stream.destroy();
      };
    }
    if (destination.startsWith('reverse:')) {
      const command = destination.slice('reverse:'.length);
      return (stream) => runReverseService(stream, device, transport, command);
    }
    const abstract = /^localabstract:(.+)$/.exec(destination);
    if (abstract) {
      // Refused (CLSE) when nothing listens on the name, as adbd does: clients poll for
      // sockets like chrome_devtools_remote this way.
      const inner = device.network.connectAbstract(abstract[1]!);
      if (!inner) return null;
      return (stream) => relay(stream, inner);
    }
    if (
      destination === 'root:' ||
      destination === 'unroot:' ||
      destination === 'remount:' ||
      destination.startsWith('reboot:')
    ) {
      return (stream) => {
        const text =
          destination === 'root:'
            ? 'adbd cannot run as root in production builds\n'
            : destination === 'unroot:'
              ? 'adbd not running as root\n'
              : destination === 'remount:'
                ? 'Not running as root. Try "adb root" first.\n'
                : 'reboot is not supported on a virtual phone\n';
        stream.end(text);
      };
    }
    // The pids of the debuggable apps' processes, one a line, then the end: adbd's `jdwp`
    // service (what `adb jdwp` prints). A user build debugs only apps built debuggable.
    if (destination === 'jdwp') return (stream) => stream.end(debuggablePids(device).join(''));
    if (destination === 'track-jdwp') return (stream) => trackJdwp(stream, device);
    const said = ADBD_ANSWERS.find(([pattern]) => pattern.test(destination));
    if (said) return (stream) => stream.end(said[1]);
    device.log.debug('virtual adb: unsupported service', { destination });
    return null;
  };
}

/** `PID\n` for each running process of a debuggable app, in pid order. */
function debuggablePids(device: Device): string[] {
  return device.processes
    .list()
    .filter((p) => device.packages.get(p.name.split(':')[0]!)?.debuggable === true)
    .map((p) => `${p.pid}\n`);
}

/** How often a `track-jdwp` stream looks for a change in the debuggable processes. */
const TRACK_POLL_MS = 250;

/**
 * `track-jdwp` (jdwp_service's tracker, what adbkit's trackJdwp and Android Studio read): the
 * debuggable pids as a hex-length message now, and again each time the list changes, until
 * the client closes the stream.
 */
function trackJdwp(stream: Duplex, device: Device): void {
  let sent: string | null = null;
  const send = () => {
    const list = debuggablePids(device).join('');
    if (list === sent || stream.destroyed || stream.writableEnded) return;
    sent = list;
    stream.write(`${Buffer.byteLength(list).toString(16).padStart(4, '0')}${list}`);
  };
  send();
  const timer = setInterval(send, TRACK_POLL_MS);
  timer.unref();
  stream.once('close', () => clearInterval(timer));
  stream.on('error', () => clearInterval(timer));
  stream.resume();
}

/**
 * What adbd answers for services that change how the phone is reached or verified, which
 * the virtual phone does not do: a user build's own words, or why it is not modeled.
 */
const ADBD_ANSWERS: readonly [RegExp, string][] = [
  [/^(disable|enable)-verity:/, 'verity cannot be disabled/enabled - USER build\n'],
  [
    /^tcpip:/,
    "adb tcpip is not modeled by the virtual phone: it is reached over TCP already (phonelease's ADB gateway)\n",
  ],
  [/^usb:/, 'adb usb is not modeled by the virtual phone: it has no USB\n'],
  // Android 12's app tracker sends AppProcesses protobufs (Android Studio's process list).
  [
    /^track-app$/,
    'track-app is not modeled by the virtual phone: track-jdwp and `adb jdwp` list the debuggable processes\n',
  ],
];
