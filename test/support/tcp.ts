/**
 * A TCP server on 127.0.0.1 and a free port whose close() also destroys every socket it
 * tracked, so a test never waits on a peer that keeps its connection open.
 */
import net from 'node:net';

export interface TrackedServer {
  port: number;
  close(): Promise<void>;
}

/** `onSocket` gets each accepted socket (already tracked) and `track` for sockets it opens itself. */
export async function trackedServer(
  onSocket: (socket: net.Socket, track: (other: net.Socket) => void) => void,
): Promise<TrackedServer> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = net.createServer((socket) => {
    track(socket);
    onSocket(socket, track);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
