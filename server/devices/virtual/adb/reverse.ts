/**
 * `reverse:` services, as adbd runs them for `adb reverse`: the phone listens on its own
 * port R and, for each connection, opens a stream back to the host over the same ADB
 * transport (a device-initiated OPEN of the host-side spec, e.g. `tcp:3000`); the adb
 * server (or the in-process client) connects that stream to the host's port.
 *
 * The phone's side is a TCP port on its loopback or an abstract socket (`localabstract:`),
 * as adbd's socket_spec_listen binds them; reserved and filesystem sockets need socket files
 * the phone's filesystem does not model, and are refused saying so.
 *
 * Replies follow adbd: `OKAY` then the bound port as a hex-length string for `forward`
 * (empty for an abstract socket), `FAIL` + hex-length message for errors, in adbd's words
 * ("cannot rebind existing socket", "listener 'tcp:R' not found", "cannot bind listener:
 * ..."). Listeners are the phone's (one table, like adbd's) and go away with the transport
 * that made them.
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
    const lines = [...table.values()].map((l) => `${l.serial} ${l.local} ${l.target}\n`);
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
    const listener = table.get(spec);
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
  if (!/^(tcp:\d+|localabstract:.+|localreserved:.+|localfilesystem:.+|jdwp:\d+)$/.test(target)) {
    fail(stream, `bad forward: ${rest}`);
    return;
  }
  const bound = bindLocal(device, local, noRebind);
  if ('error' in bound) {
    fail(stream, bound.error);
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
  const unlisten = bound.listen(handler);
  const listener: ReverseEntry = {
    local: bound.local,
    target,
    serial: transport.serial,
    remove: () => {
      if (table.get(bound.local) === listener) table.delete(bound.local);
      unlisten();
      unregister();
    },
  };
  table.set(bound.local, listener);
  unregister = transport.onClose(() => listener.remove());
  // Android 8+ answers with the bound port, so `tcp:0` tells the host what it got; an
  // abstract socket has no port to tell.
  const port = bound.port === null ? Buffer.alloc(0) : protocolString(String(bound.port));
  stream.end(Buffer.concat([Buffer.from('OKAY', 'ascii'), port]));
}

/**
 * The phone's side of a reverse, as socket_spec_listen takes it: a free TCP port on its
 * loopback (0: any), or an abstract socket name nothing holds. An existing reverse there is
 * replaced unless `noRebind`. Returns how to listen, or adbd's error.
 */
function bindLocal(
  device: Device,
  local: string,
  noRebind: boolean,
): { local: string; port: number | null; listen(handler: PortHandler): () => void } | { error: string } {
  const network = device.network;
  const tcp = /^tcp:(\d+)$/.exec(local);
  const abstract = /^localabstract:(.+)$/.exec(local);
  if (/^(localreserved|localfilesystem):./.test(local))
    return {
      error: `cannot bind listener: ${local}: socket files are not modeled by the virtual phone (use tcp:PORT or localabstract:NAME)`,
    };
  if (tcp && Number(tcp[1]) > 65535) return { error: `cannot bind listener: invalid port '${tcp[1]}'` };
  if (!tcp && !abstract) return { error: `cannot bind listener: unknown socket specification:${local}` };
  const port = tcp ? Number(tcp[1]) || network.ephemeralPort() : 0;
  const key = tcp ? `tcp:${port}` : local;
  const existing = network.reverses.get(key);
  if (existing && noRebind) return { error: 'cannot rebind existing socket' };
  if (existing) existing.remove();
  else if (tcp ? network.isListening(port) : network.abstractSockets.has(abstract![1]!))
    // Something on the phone (a server an app runs, Chrome's DevTools) already listens there.
    return {
      error: tcp
        ? `cannot bind listener: cannot bind to 127.0.0.1:${port}: Address already in use`
        : `cannot bind listener: cannot bind to abstract socket '${abstract![1]}': Address already in use`,
    };
  if (abstract) {
    const name = abstract[1]!;
    return {
      local: key,
      port: null,
      listen: (handler) => {
        network.abstractSockets.set(name, handler);
        return () => {
          if (network.abstractSockets.get(name) === handler) network.abstractSockets.delete(name);
        };
      },
    };
  }
  // adbd listens on IPv4 loopback, as the shell user.
  return {
    local: key,
    port,
    listen: (handler) => network.listen(port, handler, { uid: ADBD_UID, bind: 'loopback' }),
  };
}
