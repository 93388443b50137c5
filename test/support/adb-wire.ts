/**
 * Just enough of the ADB wire format for tests to speak to a phone through the gateway
 * without any client library: a CNXN packet and a reader for the reply.
 */
import net from 'node:net';
import type { Api } from './server.js';

export const A_CNXN = 0x4e584e43;

export function packet(command: number, arg0: number, arg1: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(command, 0);
  header.writeUInt32LE(arg0, 4);
  header.writeUInt32LE(arg1, 8);
  header.writeUInt32LE(payload.length, 12);
  header.writeUInt32LE(0, 16);
  header.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
  return Buffer.concat([header, payload]);
}

export const hostCnxn = () =>
  packet(A_CNXN, 0x01000001, 1024 * 1024, Buffer.from('host::features=shell_v2,cmd,stat_v2,ls_v2\0'));

/** Opens the gateway, sends the unlock line and returns the first line of the answer. */
export async function unlock(
  port: number,
  code: string,
  host = '127.0.0.1',
): Promise<{ socket: net.Socket; line: string; rest: Buffer }> {
  const socket = net.connect({ host, port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`UNLOCK ${code}\n`);
  let buf = Buffer.alloc(0);
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(0x0a);
      if (nl >= 0) {
        socket.off('data', onData);
        socket.pause();
        resolve({ socket, line: buf.subarray(0, nl).toString(), rest: buf.subarray(nl + 1) });
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => resolve({ socket, line: buf.toString(), rest: Buffer.alloc(0) }));
  });
}

/** Reads one ADB packet (header + payload) from a paused socket, with leftover bytes first. */
export async function readPacket(
  socket: net.Socket,
  leftover: Buffer = Buffer.alloc(0),
): Promise<{ command: number; payload: Buffer }> {
  let buf = leftover;
  return new Promise((resolve, reject) => {
    const tryParse = () => {
      if (buf.length < 24) return false;
      const len = buf.readUInt32LE(12);
      if (buf.length < 24 + len) return false;
      socket.off('data', onData);
      resolve({ command: buf.readUInt32LE(0), payload: buf.subarray(24, 24 + len) });
      return true;
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      tryParse();
    };
    if (tryParse()) return;
    socket.on('data', onData);
    socket.resume();
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('closed before a whole packet arrived')));
  });
}

/** Resolves when the socket closes (or rejects after ms). */
export function closed(socket: net.Socket, ms = 5000): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('socket still open')), ms);
    socket.once('close', () => {
      clearTimeout(t);
      resolve();
    });
    socket.resume();
  });
}

/** A new ready session of `api`'s account, and its gateway port and unlock code. */
export async function readyAdbAccess(api: Api): Promise<{ sid: string; port: number; code: string }> {
  const s = (await api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
  await api.waitFor(s.id, ['ready']);
  const adb = (await api.get(`/sessions/${s.id}/adb`)).body;
  return { sid: s.id, port: adb.port, code: adb.code };
}
