/**
 * `reverse:` services, as adbd runs them for `adb reverse`: the phone listens on its own
 * port R and, for each connection, opens a stream back to the host over the same ADB
 * transport (a device-initiated OPEN of the host-side spec, e.g. `tcp:3000`); the adb
 * server (or the in-process client) connects that stream to the host's port.
 *
 * Replies follow adbd: `OKAY` then the bound port as a hex-length string for `forward`,
 * `FAIL` + hex-length message for errors, in adbd's words ("cannot rebind existing socket",
 * "listener 'tcp:R' not found", "cannot bind listener: ..."). Listeners are the phone's
 * (one table, like adbd's) and go away with the transport that made them.
 */
import type { Device } from '../device.js';
import { relay } from '../../../../src/util/relay.js';
import { ADBD_UID } from '../network.js';
import type { PortHandler, ReverseEntry } from '../network.js';
import type { AdbStream } from './stream.js';
import type { DeviceTransport } from './connection.js';

/** `0004` + text: adb's length-prefixed string. */
function protocolString(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from(body.length.toString(16).padStart(4, '0'), 'ascii'), body]);
}

function fail(stream: AdbStream, message: string): void {
  stream.end(Buffer.concat([Buffer.from('FAIL', 'ascii'), protocolString(message)]));
}

/** The handler of `reverse:<command>` (the part after `reverse:`). */
export function runReverseService(
  stream: AdbStream,
  device: Device,
  transport: DeviceTransport,
  command: string,
): void {
  const table = device.network.reverses;
  if (command === 'list-forward') {
    const lines = [...table.values()].map((l) => `${l.serial} tcp:${l.port} ${l.target}\n`);
    stream.end(protocolString(lines.join('')));
    return;
  }
  if (command === 'killforward-all') {
    for (const listener of [...table.values()]) listener.remove();
    stream.end(Buffer.from('OKAY', 'ascii'));
    return;
  }
  if (command.startsWith('killforward:')) {
    const spec = command.slice('killforward:'.length);
    const port = /^tcp:(\d+)$/.exec(spec);
    const listener = port ? table.get(Number(port[1])) : undefined;
    if (!listener) {
      fail(stream, `listener '${spec}' not found`);
      return;
    }
    listener.remove();
    stream.end(Buffer.from('OKAY', 'ascii'));
    return;
  }
  if (!command.startsWith('forward:')) {
    fail(stream, `unknown reverse command: ${command}`);
    return;
  }
  let rest = command.slice('forward:'.length);
  const noRebind = rest.startsWith('norebind:');
  if (noRebind) rest = rest.slice('norebind:'.length);
  const semicolon = rest.indexOf(';');
  if (semicolon <= 0 || semicolon === rest.length - 1) {
    fail(stream, `bad forward: ${rest}`);
    return;
  }
  const local = rest.slice(0, semicolon);
  const target = rest.slice(semicolon + 1);
  const localPort = /^tcp:(\d+)$/.exec(local);
  if (!localPort || Number(localPort[1]) > 65535) {
    // The phone's side of a reverse is a TCP port on its loopback (what apps connect to).
    fail(stream, `cannot bind listener: unsupported listener '${local}' (use tcp:PORT)`);
    return;
  }
  if (!/^(tcp:\d+|localabstract:.+|localreserved:.+|localfilesystem:.+|jdwp:\d+)$/.test(target)) {
    fail(stream, `bad forward: ${rest}`);
    return;
  }
  let port = Number(localPort[1]);
  if (port === 0) port = device.network.ephemeralPort();
  const existing = table.get(port);
  if (existing) {
    if (noRebind) {
      fail(stream, 'cannot rebind existing socket');
      return;
    }
    existing.remove();
  } else if (device.network.isListening(port)) {
    // Something on the phone (a server an app runs) already listens there.
    fail(stream, `cannot bind listener: cannot bind to 127.0.0.1:${port}: Address already in use`);
    return;
  }
  const handler: PortHandler = (socket) => {
    transport.openStream(target).then(
      (back) => relay(socket, back),
      (error: unknown) => {
        device.log.debug('virtual adb: reverse connection refused by the host', {
          target,
          error: String(error),
        });
        socket.destroy();
      },
    );
  };
  let unregister: () => void = () => undefined;
  // adbd listens on IPv4 loopback, as the shell user.
  const unlisten = device.network.listen(port, handler, { uid: ADBD_UID, bind: 'loopback' });
  const listener: ReverseEntry = {
    port,
    target,
    serial: transport.serial,
    remove: () => {
      if (table.get(port) === listener) table.delete(port);
      unlisten();
      unregister();
    },
  };
  table.set(port, listener);
  unregister = transport.onClose(() => listener.remove());
  // Android 8+ answers with the bound port, so `tcp:0` tells the host what it got.
  stream.end(Buffer.concat([Buffer.from('OKAY', 'ascii'), protocolString(String(port))]));
}
