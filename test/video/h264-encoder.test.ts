/**
 * The H.264 encoder, judged by ffmpeg's decoder: streams it writes from the virtual phone's
 * screens decode without error, picture for picture to the encoder's own reconstruction
 * (no drift), close to the screens, and cheaply where nothing changed. Streams are checked
 * raw (Annex B byte stream), with no container between the encoder and the decoder.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  EncodeStopped,
  H264Encoder,
  type EncodedPicture,
} from '../../server/devices/virtual/video/h264/encoder.js';
import { levelFor } from '../../server/devices/virtual/video/h264/parameter-sets.js';
import { baseQp } from '../../server/devices/virtual/video/h264/rate-control.js';
import { ScreenScaler } from '../../server/devices/virtual/video/scale.js';
import {
  decodeErrors,
  decodeRgb,
  decodeYuv,
  phoneSession,
  phoneUi,
  probe,
  psnrRgb,
  tapId,
} from '../support/video.js';

const dir = mkdtempSync(join(tmpdir(), 'phonelease-h264-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const session = phoneSession();

interface Encoded {
  file: string;
  pictures: EncodedPicture[];
  /** The encoder's reconstruction after each frame, Y then Cb then Cr. */
  reconstructions: Uint8Array[];
}

/** Encodes frames shown `stepMs` apart into a raw H.264 file (start codes before each NAL unit). */
function encode(name: string, encoder: H264Encoder, frames: Uint8Array[], stepMs = 100): Encoded {
  const pictures: EncodedPicture[] = [];
  const reconstructions: Uint8Array[] = [];
  const parts: Uint8Array[] = [];
  frames.forEach((frame, i) => {
    const picture = encoder.encode(frame, i * stepMs);
    pictures.push(picture);
    for (const nal of picture.nalUnits) parts.push(Uint8Array.of(0, 0, 0, 1), nal);
    const r = encoder.reconstruction();
    reconstructions.push(Buffer.concat([r.y, r.u, r.v]));
  });
  const file = join(dir, name);
  writeFileSync(file, Buffer.concat(parts));
  return { file, pictures, reconstructions };
}

const bytesOf = (p: EncodedPicture) => p.nalUnits.reduce((n, nal) => n + nal.length, 0);

describe('H.264 encoder', () => {
  const phone = encode(
    'phone.h264',
    new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 }),
    session,
  );

  it('writes a stream ffprobe reads as Constrained Baseline H.264 in BT.601 limited range', async () => {
    const { stream } = await probe(phone.file);
    expect(stream).toMatchObject({
      codec_name: 'h264',
      profile: 'Constrained Baseline',
      width: 720,
      height: 1280,
      pix_fmt: 'yuv420p',
      color_range: 'tv',
      color_space: 'smpte170m',
    });
    expect(Number(stream.nb_read_frames)).toBe(session.length);
    expect(await decodeErrors(phone.file)).toBe('');
  });

  it('decodes to its own reconstruction, bit for bit, picture after picture', async () => {
    const decoded = await decodeYuv(phone.file, 720, 1280);
    expect(decoded).toHaveLength(session.length);
    decoded.forEach((picture, i) =>
      expect(Buffer.compare(picture, phone.reconstructions[i]!), `frame ${i}`).toBe(0),
    );
  });

  it('shows the screens faithfully: over 40 dB PSNR per frame at the default bit rate', async () => {
    // 40 dB: the error left is the 4:2:0 chroma of coloured text edges and quantisation
    // well below what an eye notices; 35 dB would already pass visibly softer text.
    const decoded = await decodeRgb(phone.file, 720, 1280);
    decoded.forEach((rgb, i) => expect(psnrRgb(session[i]!, rgb), `frame ${i}`).toBeGreaterThan(40));
  });

  it('codes only what changed: a typed character costs a few macroblocks', () => {
    // Frames 2-5 each add one character to the username field.
    for (const p of phone.pictures.slice(3, 6)) {
      expect(p.keyframe).toBe(false);
      expect(p.codedMacroblocks).toBeGreaterThan(0);
      expect(p.codedMacroblocks).toBeLessThan(20);
      expect(bytesOf(p)).toBeLessThan(1000);
    }
  });

  it('writes a few bytes for a frame identical to the one before', async () => {
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    const same = encode('same.h264', encoder, [session[1]!, session[1]!, session[1]!]);
    for (const p of same.pictures.slice(1)) {
      expect(p.codedMacroblocks).toBe(0);
      expect(bytesOf(p)).toBeLessThanOrEqual(12);
    }
    const decoded = await decodeYuv(same.file, 720, 1280);
    expect(decoded).toHaveLength(3);
    expect(Buffer.compare(decoded[2]!, decoded[0]!)).toBe(0);
  });

  it('copies a screen seen a few pictures ago from that picture: going back costs a few bytes', async () => {
    const [launcher, login, settings] = [session[0]!, session[1]!, session.at(-1)!];
    const frames = [launcher, login, settings, login, launcher, settings];
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    expect(encoder.references).toBe(8);
    const back = encode('back.h264', encoder, frames);
    const once = encode(
      'back-one-reference.h264',
      new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000, references: 1 }),
      frames,
    );
    for (let i = 3; i < frames.length; i++) {
      const p = back.pictures[i]!;
      // Every macroblock that changed since the last picture is a copy of an earlier one.
      expect(p.copiedMacroblocks, `frame ${i}`).toBeGreaterThan(1000);
      expect(p.copiedMacroblocks, `frame ${i}`).toBe(p.codedMacroblocks);
      // About a byte a macroblock (its type, reference and zero vector): a third of coding
      // the screen again, and no search or transform at all.
      expect(bytesOf(p), `frame ${i}`).toBeLessThan(bytesOf(once.pictures[i]!) / 2.5);
      expect(once.pictures[i]!.copiedMacroblocks).toBe(0);
    }
    // The decoder holds the same pictures and copies the same blocks: no drift, no loss.
    const decoded = await decodeYuv(back.file, 720, 1280);
    expect(decoded).toHaveLength(frames.length);
    decoded.forEach((picture, i) =>
      expect(Buffer.compare(picture, back.reconstructions[i]!), `frame ${i}`).toBe(0),
    );
    expect(Buffer.compare(decoded[3]!, decoded[1]!)).toBe(0);
    expect(Buffer.compare(decoded[4]!, decoded[0]!)).toBe(0);
    const rgb = await decodeRgb(back.file, 720, 1280);
    rgb.forEach((picture, i) => expect(psnrRgb(frames[i]!, picture), `frame ${i}`).toBeGreaterThan(40));
    expect(await decodeErrors(back.file)).toBe('');
  });

  it('copies from several pictures in one, row by row and within a row, and from seven pictures back', async () => {
    const [launcher, login, settings] = [session[0]!, session[1]!, session.at(-1)!];
    const rowBytes = 720 * 4;
    // Top half as the launcher, bottom half as Settings: whole rows of macroblocks, each
    // from its own reference.
    const halves = Buffer.from(launcher);
    halves.set(settings.subarray(640 * rowBytes), 640 * rowBytes);
    // Left 22 macroblocks as the login screen, the rest as the launcher: two references in a row.
    const sides = Buffer.from(launcher);
    for (let y = 0; y < 1280; y++)
      sides.set(login.subarray(y * rowBytes, y * rowBytes + 352 * 4), y * rowBytes);
    // Seven screens that differ only in the text typed, then the first again.
    const ui = phoneUi();
    ui.launch('com.phonelease.login');
    tapId(ui, 'com.phonelease.login:id/username');
    const typed = [ui.renderRgba().slice()];
    for (const c of 'abcdefg') {
      ui.text(c);
      typed.push(ui.renderRgba().slice());
    }
    const frames = [launcher, login, settings, halves, sides, ...typed, typed[0]!];
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    const mixed = encode('mixed.h264', encoder, frames);
    const [halvesPicture, sidesPicture] = [mixed.pictures[3]!, mixed.pictures[4]!];
    expect(halvesPicture.copiedMacroblocks).toBe(halvesPicture.codedMacroblocks);
    expect(halvesPicture.codedMacroblocks).toBeGreaterThan(1000);
    expect(sidesPicture.copiedMacroblocks).toBe(sidesPicture.codedMacroblocks);
    expect(sidesPicture.codedMacroblocks).toBeGreaterThan(500);
    // The empty field again: what changed since "abcdefg" is copied from the picture seven
    // before the last, which a stream of four references no longer holds.
    const again = mixed.pictures.at(-1)!;
    expect(again.codedMacroblocks).toBeGreaterThan(0);
    expect(again.copiedMacroblocks).toBe(again.codedMacroblocks);
    const decoded = await decodeYuv(mixed.file, 720, 1280);
    expect(decoded).toHaveLength(frames.length);
    decoded.forEach((picture, i) =>
      expect(Buffer.compare(picture, mixed.reconstructions[i]!), `frame ${i}`).toBe(0),
    );
    expect(Buffer.compare(decoded.at(-1)!, decoded[5]!)).toBe(0);
    const rgb = await decodeRgb(mixed.file, 720, 1280);
    rgb.forEach((picture, i) => expect(psnrRgb(frames[i]!, picture), `frame ${i}`).toBeGreaterThan(40));
    expect(await decodeErrors(mixed.file)).toBe('');
  });

  it('starts an IDR picture every idrIntervalMs, so a cut recording plays from the last one', async () => {
    const ui = phoneUi();
    ui.launch('com.phonelease.login');
    tapId(ui, 'com.phonelease.login:id/username');
    const frames = Array.from({ length: 13 }, (_, i) => {
      ui.text(String(i % 10));
      return ui.renderRgba().slice();
    });
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000, idrIntervalMs: 5000 });
    const typed = encode('idr.h264', encoder, frames, 1000);
    expect(typed.pictures.map((p) => p.keyframe)).toEqual(frames.map((_, i) => i % 5 === 0));
    // Every IDR picture carries SPS and PPS, so a decoder can start at any of them.
    for (const p of typed.pictures.filter((x) => x.keyframe))
      expect(p.nalUnits.map((n) => n[0]! & 0x1f)).toEqual([7, 8, 5]);
    expect(await decodeErrors(typed.file)).toBe('');
  });

  it('stops a picture part way when asked, once per row of macroblocks', () => {
    const ui = phoneUi();
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    let asked = 0;
    expect(() => encoder.encode(ui.renderRgba(), 0, { stop: () => ++asked > 3 })).toThrow(EncodeStopped);
    // Asked before each row, and stopped before the fourth of its 80.
    expect(asked).toBe(4);
    const whole = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    let rows = 0;
    expect(whole.encode(ui.renderRgba(), 0, { stop: () => (rows++, false) }).keyframe).toBe(true);
    expect(rows).toBe(1280 / 16);
  });

  it('undoes a stopped picture: the next is coded as if the stopped one had never begun', () => {
    // Home, Login, a name typed; between them Settings (a whole screen, coded over the
    // reconstruction) stopped half way, as an IDR or as a P picture.
    const [home, login, , , , typed, , , settings] = session;
    const stream = [home!, login!, typed!];
    for (const keyframe of [false, true]) {
      const stopped = new H264Encoder({ width: 720, height: 1280, bitRate: 4_000_000 });
      const fresh = new H264Encoder({ width: 720, height: 1280, bitRate: 4_000_000 });
      expect(stopped.references).toBeGreaterThan(1);
      const pictures: Array<[EncodedPicture, EncodedPicture]> = [];
      stream.forEach((frame, i) => {
        if (i === 2) {
          let rows = 0;
          let thrown: unknown;
          try {
            stopped.encode(settings!, 150, { keyframe, stop: () => ++rows > 40 });
          } catch (error) {
            thrown = error;
          }
          expect(thrown).toBeInstanceOf(EncodeStopped);
          expect((thrown as EncodeStopped).undone).toBe(true);
        }
        pictures.push([stopped.encode(frame, i * 100), fresh.encode(frame, i * 100)]);
      });
      for (const [a, b] of pictures) expect(Buffer.concat(a.nalUnits)).toEqual(Buffer.concat(b.nalUnits));
      expect(stopped.reconstruction()).toEqual(fresh.reconstruction());
    }
  });

  it('refuses to go on after a stopped picture it cannot undo (one reference picture)', () => {
    const [home, login] = session;
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 4_000_000, references: 1 });
    encoder.encode(home!, 0);
    expect(encoder.undoable).toBe(false);
    let rows = 0;
    expect(() => encoder.encode(login!, 100, { stop: () => ++rows > 10 })).toThrow(
      expect.objectContaining({ name: 'EncodeStopped', undone: false }),
    );
    expect(() => encoder.encode(login!, 200)).toThrow(/could not undo/);
  });

  it('crops a size that is not a whole number of macroblocks', async () => {
    const scaler = new ScreenScaler(720, 1280, 362, 202);
    const frames = session.map((f) => scaler.scale(f).slice());
    const small = encode(
      'cropped.h264',
      new H264Encoder({ width: 362, height: 202, bitRate: 4_000_000 }),
      frames,
    );
    const { stream } = await probe(small.file);
    expect([stream.width, stream.height]).toEqual([362, 202]);
    const decoded = await decodeYuv(small.file, 362, 202);
    decoded.forEach((picture, i) =>
      expect(Buffer.compare(picture, small.reconstructions[i]!), `frame ${i}`).toBe(0),
    );
  });

  it('makes smaller streams at lower bit rates, which still decode', async () => {
    const sizes: number[] = [];
    for (const bitRate of [20_000_000, 2_000_000, 200_000]) {
      const e = encode(
        `rate-${bitRate}.h264`,
        new H264Encoder({ width: 720, height: 1280, bitRate }),
        session,
      );
      sizes.push(e.pictures.reduce((n, p) => n + bytesOf(p), 0));
      expect(await decodeErrors(e.file)).toBe('');
    }
    expect(sizes[1]).toBeLessThan(sizes[0]!);
    expect(sizes[2]).toBeLessThan(sizes[1]!);
  });

  it('decodes bit-exactly whatever it is given: noise, gradients and partial changes, at any QP', async () => {
    // Screens are easy; these are not: large levels, busy neighbours (high nC), every
    // prediction mode, intra and inter macroblocks side by side.
    const width = 96;
    const height = 64;
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const noise = Uint8Array.from({ length: width * height * 4 }, () => Math.floor(random() * 256));
    const gradient = Uint8Array.from({ length: width * height * 4 }, (_, i) => {
      const p = i >> 2;
      return ((p % width) * 3 + Math.floor(p / width) * (i & 3) * 2) & 0xff;
    });
    const patched = gradient.slice();
    patched.set(noise.subarray(0, width * 4 * 20), width * 4 * 30);
    const frames = [noise, gradient, patched, noise, noise.map((v) => 255 - v)];
    for (const qp of [12, 30, 51]) {
      const e = encode(`hard-${qp}.h264`, new H264Encoder({ width, height, bitRate: 1e6, qp }), frames);
      const decoded = await decodeYuv(e.file, width, height);
      expect(decoded).toHaveLength(frames.length);
      decoded.forEach((picture, i) =>
        expect(Buffer.compare(picture, e.reconstructions[i]!), `QP ${qp} frame ${i}`).toBe(0),
      );
    }
  });

  it('finds changes and screens that came back alike whether the pixels start on a 32-bit word or not', () => {
    // 100 pixels wide: the last column of macroblocks has 4 pixels of the frame.
    const width = 100;
    const height = 72;
    const a = Uint8Array.from({ length: width * height * 4 }, (_, i) => (i * 7) & 0xff);
    const b = a.map((v) => 255 - v);
    const edge = a.slice();
    // Inverted: four pixels in the last, partial column of macroblocks, and the first four of
    // rows 63 and 64 (either side of a row of macroblocks' edge).
    const invert = (x0: number, y: number) => {
      for (let x = x0; x < x0 + 4; x++)
        for (let c = 0; c < 3; c++) edge[(y * width + x) * 4 + c] = 255 - a[(y * width + x) * 4 + c]!;
    };
    invert(96, 40);
    invert(0, 63);
    invert(0, 64);
    const frames = [a, b, a, edge, b];
    const unaligned = (frame: Uint8Array) => {
      const shifted = new Uint8Array(frame.length + 1).subarray(1);
      shifted.set(frame);
      return shifted;
    };
    const streams = [frames, frames.map(unaligned)].map((list, n) =>
      encode(`aligned-${n}.h264`, new H264Encoder({ width, height, bitRate: 1e6, qp: 26 }), list),
    );
    const [words, bytes] = streams as [Encoded, Encoded];
    expect(words.pictures.map((p) => p.nalUnits.map((u) => Buffer.from(u)))).toEqual(
      bytes.pictures.map((p) => p.nalUnits.map((u) => Buffer.from(u))),
    );
    // The screen back from two pictures ago is copied; the changed pixels are in three
    // macroblocks, and those are the ones coded.
    expect(words.pictures[2]!.copiedMacroblocks).toBe(words.pictures[2]!.codedMacroblocks);
    expect(words.pictures[2]!.copiedMacroblocks).toBeGreaterThan(0);
    expect(words.pictures[3]!.codedMacroblocks).toBe(3);
  });

  it('refuses sizes 4:2:0 video cannot have, saying why', () => {
    expect(() => new H264Encoder({ width: 721, height: 1280, bitRate: 1e6 })).toThrow(
      /even width and height/,
    );
    expect(() => new H264Encoder({ width: 8, height: 8, bitRate: 1e6 })).toThrow(/at least 16/);
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 1e6 });
    expect(() => encoder.encode(new Uint8Array(10), 0)).toThrow(/expected 720x1280 RGBA/);
  });
});

describe('stream parameters', () => {
  it('chooses the lowest level whose decoders take the picture size, frame rate, bit rate and references', () => {
    expect(levelFor({ width: 720, height: 1280, maxFps: 30, bitRate: 4_000_000 })).toBe(31);
    // Five frames of 720x1280 fit level 3.1's buffer, nine level 4.0's.
    expect(levelFor({ width: 720, height: 1280, maxFps: 30, bitRate: 4_000_000, references: 5 })).toBe(31);
    expect(levelFor({ width: 720, height: 1280, maxFps: 30, bitRate: 4_000_000, references: 8 })).toBe(40);
    // No level holds eight of 4096x2304 (five at most): the lowest for the rest.
    expect(levelFor({ width: 4096, height: 2304, maxFps: 30, bitRate: 20_000_000 })).toBe(52);
    expect(levelFor({ width: 4096, height: 2304, maxFps: 30, bitRate: 20_000_000, references: 8 })).toBe(52);
    expect(levelFor({ width: 720, height: 1280, maxFps: 30, bitRate: 20_000_000 })).toBe(32);
    expect(levelFor({ width: 1080, height: 2400, maxFps: 30, bitRate: 20_000_000 })).toBe(50);
    expect(levelFor({ width: 176, height: 144, maxFps: 15, bitRate: 64_000 })).toBe(10);
  });

  it('maps bit rates to a QP: 20 at Android’s default, coarser as the rate falls', () => {
    expect(baseQp(20_000_000, 720, 1280)).toBe(20);
    expect(baseQp(4_000_000, 720, 1280)).toBe(25);
    expect(baseQp(1_000_000, 720, 1280)).toBe(31);
    expect(baseQp(100_000, 720, 1280)).toBe(33);
  });
});
