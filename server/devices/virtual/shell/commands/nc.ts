/**
 * toybox-style `nc`: `nc -l -p PORT` serves one connection on a port inside the phone (reach
 * it with `adb forward`), relaying stdin/stdout; `nc localhost PORT` connects to such a port.
 */
import type { Duplex } from 'node:stream';
import type { CommandContext, CommandFn } from '../command.js';

/** Relays between the command's stdio and a socket until the socket closes. */
async function relay(ctx: CommandContext, socket: Duplex): Promise<number> {
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.once('end', () => resolve());
    socket.once('error', () => resolve());
  });
  socket.on('data', (chunk: Buffer) => {
    ctx.stdout.write(chunk);
    if (ctx.stdout.closed) socket.destroy();
    else {
      socket.pause();
      ctx.stdout.drain().then(
        () => socket.resume(),
        () => socket.destroy(),
      );
    }
  });
  const pump = (async () => {
    for (;;) {
      const chunk = await Promise.race([ctx.stdin.read(), closed.then(() => null)]);
      if (chunk === null || socket.destroyed) break;
      if (!socket.write(chunk)) await new Promise((resolve) => socket.once('drain', resolve));
    }
    if (!socket.destroyed) socket.end();
  })();
  const onAbort = () => socket.destroy();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await closed;
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    socket.destroy();
  }
  await pump;
  return 0;
}

export const nc: CommandFn = async (ctx) => {
  let listen = false;
  let port: number | null = null;
  const operands: string[] = [];
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '-l' || a === '-L') listen = true;
    else if (a === '-p') port = Number(ctx.args[++i]);
    else if (/^-[qwWs]$/.test(a)) i++;
    else if (/^-l?p\d+$/.test(a)) {
      listen = listen || a.includes('l');
      port = Number(a.replace(/^-l?p/, ''));
    } else if (a.startsWith('-')) {
      if (a.includes('l')) listen = true;
    } else operands.push(a);
  }
  const network = ctx.device.network;
  if (listen) {
    if (port === null && operands.length > 0) port = Number(operands[operands.length - 1]);
    if (port === null || !Number.isInteger(port) || port <= 0 || port > 65535) {
      ctx.stderr.write('nc: listen needs -p PORT\n');
      return 1;
    }
    if (network.isListening(port)) {
      ctx.stderr.write('nc: bind: Address already in use\n');
      return 1;
    }
    const listenPort = port;
    const socket = await new Promise<Duplex | null>((resolve) => {
      const onAbort = () => {
        unlisten();
        resolve(null);
      };
      // One connection, as toybox nc -l serves; it listens on the IPv6 wildcard.
      const unlisten = network.listen(
        listenPort,
        (s: Duplex) => {
          unlisten();
          ctx.signal.removeEventListener('abort', onAbort);
          resolve(s);
        },
        { uid: ctx.cred.uid, bind: 'any' },
      );
      ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    if (!socket) return 130;
    return relay(ctx, socket);
  }
  const [host, portText] = operands;
  const target = Number(portText);
  if (!host || !Number.isInteger(target)) {
    ctx.stderr.write('usage: nc [-l] [-p PORT] [HOST PORT]\n');
    return 1;
  }
  const socket = ['localhost', '127.0.0.1', '::1', '0.0.0.0'].includes(host)
    ? network.connectPort(target, ctx.cred.uid)
    : null;
  if (!socket) {
    ctx.stderr.write(`nc: connect to ${host} port ${target}: Connection refused\n`);
    return 1;
  }
  return relay(ctx, socket);
};
