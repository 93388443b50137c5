/**
 * WebSocket frames (RFC 6455 §5) as the DevTools relay reads them: whole messages from the
 * client, unmasked and with their frames' bytes, and the frame boundaries of what the
 * browser sends, where an answer of the relay's own may be put between two messages.
 */
import { randomBytes } from 'node:crypto';

export const OPCODE_TEXT = 0x1;
export const OPCODE_BINARY = 0x2;
const OPCODE_CONTINUATION = 0x0;
/** Continuation, text, binary, close, ping, pong. */
const KNOWN_OPCODES = new Set([0x0, 0x1, 0x2, 0x8, 0x9, 0xa]);

/** One message (or control frame) as it came: its frames' bytes, and the payload unmasked. */
export interface WsMessage {
  opcode: number;
  raw: Buffer;
  payload: Buffer;
}

/** A frame's header once enough bytes are there: where its payload starts, and its length. */
function header(buf: Buffer): { start: number; length: number; masked: boolean } | null {
  if (buf.length < 2) return null;
  const masked = (buf[1]! & 0x80) !== 0;
  let length = buf[1]! & 0x7f;
  let start = 2;
  if (length === 126) {
    if (buf.length < 4) return null;
    length = buf.readUInt16BE(2);
    start = 4;
  } else if (length === 127) {
    if (buf.length < 10) return null;
    length = Number(buf.readBigUInt64BE(2));
    start = 10;
  }
  if (masked) start += 4;
  return buf.length < start ? null : { start, length, masked };
}

/**
 * Reads a client's frames into messages: a fragmented message comes out once its last frame
 * is in, and a control frame (ping, pong, close) at once, even between fragments. Throws on
 * a protocol error.
 */
export class MessageReader {
  private buffered: Buffer = Buffer.alloc(0);
  private fragments: { opcode: number; raw: Buffer[]; payload: Buffer[] } | null = null;

  /** Feeds bytes; returns the messages they complete. */
  push(chunk: Buffer): WsMessage[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const out: WsMessage[] = [];
    for (;;) {
      const h = header(this.buffered);
      if (!h || this.buffered.length < h.start + h.length) break;
      const raw = this.buffered.subarray(0, h.start + h.length);
      const payload = Buffer.from(raw.subarray(h.start));
      if (h.masked) {
        const key = raw.subarray(h.start - 4, h.start);
        for (let i = 0; i < payload.length; i++) payload[i]! ^= key[i & 3]!;
      }
      this.buffered = this.buffered.subarray(h.start + h.length);
      const fin = (raw[0]! & 0x80) !== 0;
      const opcode = raw[0]! & 0x0f;
      // What RFC 6455 makes a protocol error, refused rather than passed on for the server
      // to read some other way: extension bits (none was agreed), unknown opcodes, a
      // continuation of nothing, a new message inside a fragmented one, and an unmasked
      // client frame.
      if ((raw[0]! & 0x70) !== 0) throw new Error('WebSocket frame with reserved bits set');
      if (!KNOWN_OPCODES.has(opcode)) throw new Error(`WebSocket frame with reserved opcode ${opcode}`);
      if (!h.masked) throw new Error('unmasked WebSocket frame from a client');
      if (opcode >= 0x8) {
        out.push({ opcode, raw, payload });
        continue;
      }
      if ((opcode === OPCODE_CONTINUATION) !== (this.fragments !== null))
        throw new Error('WebSocket continuation out of place');
      const message = this.fragments ?? { opcode, raw: [] as Buffer[], payload: [] as Buffer[] };
      message.raw.push(raw);
      message.payload.push(payload);
      if (!fin) {
        this.fragments = message;
        continue;
      }
      this.fragments = null;
      out.push({
        opcode: message.opcode,
        raw: Buffer.concat(message.raw),
        payload: Buffer.concat(message.payload),
      });
    }
    return out;
  }
}

/**
 * Follows the frames a server sends, to tell when the stream stands between two messages:
 * not inside a frame, and not between the fragments of one message.
 */
export class FrameBoundaries {
  private head: Buffer = Buffer.alloc(0);
  /** Payload bytes of the current frame still to come. */
  private remaining = 0;
  private inFragmentedMessage = false;

  /** Takes the next bytes of the stream. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - at);
        this.remaining -= take;
        at += take;
        continue;
      }
      // A header is at most 14 bytes. Read in place when it starts in this chunk; a header
      // split between chunks is put together first.
      const source =
        this.head.length === 0
          ? chunk.subarray(at)
          : Buffer.concat([this.head, chunk.subarray(at, at + 14 - this.head.length)]);
      const h = header(source);
      if (!h) {
        this.head = Buffer.from(source);
        at = chunk.length;
        continue;
      }
      at += h.start - this.head.length;
      const first = source[0]!;
      if ((first & 0x0f) < 0x8) this.inFragmentedMessage = (first & 0x80) === 0;
      this.head = Buffer.alloc(0);
      this.remaining = h.length;
    }
  }

  /** Between two messages: a frame of another message may be written now. */
  get atMessageBoundary(): boolean {
    return this.remaining === 0 && this.head.length === 0 && !this.inFragmentedMessage;
  }
}

/** One final frame; masked as a client's must be. */
export function encodeFrame(opcode: number, payload: Buffer, masked: boolean): Buffer {
  const length = payload.length;
  const extended = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const head = Buffer.alloc(2 + extended + (masked ? 4 : 0));
  head[0] = 0x80 | opcode;
  head[1] = (masked ? 0x80 : 0) | (extended === 0 ? length : extended === 2 ? 126 : 127);
  if (extended === 2) head.writeUInt16BE(length, 2);
  else if (extended === 8) head.writeBigUInt64BE(BigInt(length), 2);
  if (!masked) return Buffer.concat([head, payload]);
  const key = randomBytes(4);
  key.copy(head, 2 + extended);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= key[i & 3]!;
  return Buffer.concat([head, body]);
}
