/**
 * The ADB gateway handshake (phonelease's decision, docs/api.md "ADB"): open TCP to the host and
 * port from GET /sessions/{sid}/adb, send `UNLOCK <code>\n`, and read one line back: `OK`
 * means every following byte is raw ADB to and from the phone; `DENIED` means the code is
 * wrong, revoked, or its session closed or expired.
 */
import net from 'node:net';
import { AdbError } from '../errors.js';

export interface AdbEndpoint {
  host: string;
  port: number;
  /** The unlock code (secret: never logged). */
  code: string;
}

const MAX_REPLY = 64;

/** A socket past the unlock line, ready for raw ADB bytes. */
export function openGateway(
  endpoint: AdbEndpoint,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<net.Socket> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: endpoint.host, port: endpoint.port });
    socket.setNoDelay(true);
    let reply = Buffer.alloc(0);
    const fail = (error: Error) => {
      cleanup();
      socket.destroy();
      reject(error);
    };
    const onError = (error: Error) =>
      fail(
        new AdbError(
          'adb_unavailable',
          `Could not reach the ADB gateway at ${endpoint.host}:${endpoint.port} (${error.message}).`,
          { cause: error },
        ),
      );
    const onClose = () =>
      fail(
        new AdbError('adb_denied', 'The ADB gateway closed the connection before answering the unlock line.'),
      );
    const onAbort = () =>
      fail(options.signal!.reason instanceof Error ? options.signal!.reason : new Error('aborted'));
    const timer = setTimeout(
      () => fail(new AdbError('adb_unavailable', `The ADB gateway did not answer within ${timeoutMs} ms.`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      reply = Buffer.concat([reply, chunk]);
      const nl = reply.indexOf(0x0a);
      if (nl < 0) {
        if (reply.length > MAX_REPLY)
          fail(new AdbError('adb_failed', 'The ADB gateway sent an unexpected reply to the unlock line.'));
        return;
      }
      const line = reply.subarray(0, nl).toString('latin1').trim();
      const rest = reply.subarray(nl + 1);
      if (line !== 'OK') {
        fail(
          new AdbError(
            'adb_denied',
            line === 'DENIED'
              ? 'The ADB gateway refused the unlock code: ADB was revoked, or the session closed or expired. Start a new lease.'
              : 'The ADB gateway sent an unexpected reply to the unlock line.',
          ),
        );
        return;
      }
      cleanup();
      // Bytes the phone sent right behind OK belong to the ADB stream: give them back, and
      // pause so they wait for the consumer (pipe() or the packet reader resumes it).
      socket.pause();
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    const cleanup = () => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      options.signal?.removeEventListener('abort', onAbort);
    };
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.on('data', onData);
    socket.once('connect', () => socket.write(`UNLOCK ${endpoint.code}\n`));
  });
}
