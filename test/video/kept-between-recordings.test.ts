/**
 * What an encoder thread keeps from one picture and one recording to the next, and that it
 * changes nothing in the video.
 * - Screens coded whole are kept by their pixels (h264/screen-cache.ts): a screen shown again
 *   once it has left the reference pictures, or in a later recording on the same thread, is
 *   written from the cache instead of being coded again. What is written must be exactly
 *   what coding it again writes (the bytes after its own slice header, and the
 *   reconstruction), and ffmpeg must decode it to that reconstruction.
 * - Reference pictures' memory is kept for the next pictures and the next encoder
 *   (SparePictures): what the reused memory held before must never show.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  H264Encoder,
  SparePictures,
  type EncodedPicture,
} from '../../server/devices/virtual/video/h264/encoder.js';
import { ScreenCache } from '../../server/devices/virtual/video/h264/screen-cache.js';
import { FramePipeline, ThreadKeep } from '../../server/devices/virtual/video/frame-encoder.js';
import type { DisplayList } from '../../server/devices/virtual/ui/display-list.js';
import { decodeErrors, decodeYuv, phoneSession, phoneUi, tapId } from '../support/video.js';

const dir = mkdtempSync(join(tmpdir(), 'phonelease-screen-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const session = phoneSession();
const [launcher, login, typed] = session as [Uint8Array, Uint8Array, Uint8Array];
const settings = session.at(-1)!;

interface Stream {
  pictures: EncodedPicture[];
  /** Y, Cb and Cr of the encoder's reconstruction after each picture. */
  reconstructions: Buffer[];
  /** How many pictures the cache gave. */
  hits: number;
  /** The raw stream (start codes before each NAL unit). */
  file: string;
}

let files = 0;

/** Encodes `frames` 100 ms apart with a new encoder (released at the end when it has spares). */
function stream(
  frames: Uint8Array[],
  options: {
    screenCache?: ScreenCache;
    spares?: SparePictures;
    bitRate?: number;
    references?: number;
    idrIntervalMs?: number;
  } = {},
): Stream {
  const cache = options.screenCache;
  const find = cache ? vi.spyOn(cache, 'find') : null;
  const encoder = new H264Encoder({
    width: 720,
    height: 1280,
    bitRate: options.bitRate ?? 20_000_000,
    ...(options.references ? { references: options.references } : {}),
    ...(options.idrIntervalMs ? { idrIntervalMs: options.idrIntervalMs } : {}),
    ...(cache ? { screenCache: cache } : {}),
    ...(options.spares ? { spares: options.spares } : {}),
  });
  const pictures: EncodedPicture[] = [];
  const reconstructions: Buffer[] = [];
  const parts: Uint8Array[] = [];
  frames.forEach((frame, i) => {
    const picture = encoder.encode(frame, i * 100);
    pictures.push(picture);
    for (const nal of picture.nalUnits) parts.push(Uint8Array.of(0, 0, 0, 1), nal);
    const r = encoder.reconstruction();
    reconstructions.push(Buffer.concat([r.y, r.u, r.v]));
  });
  if (options.spares) encoder.release();
  const hits = find?.mock.results.filter((r) => r.value !== null).length ?? 0;
  find?.mockRestore();
  const file = join(dir, `stream-${files++}.h264`);
  writeFileSync(file, Buffer.concat(parts));
  return { pictures, reconstructions, hits, file };
}

function expectSameStream(actual: Stream, expected: Stream): void {
  expect(actual.pictures).toHaveLength(expected.pictures.length);
  actual.pictures.forEach((picture, i) => {
    const want = expected.pictures[i]!;
    expect(
      picture.nalUnits.map((n) => Buffer.from(n)),
      `picture ${i}`,
    ).toEqual(want.nalUnits.map((n) => Buffer.from(n)));
    expect(Buffer.compare(actual.reconstructions[i]!, expected.reconstructions[i]!), `picture ${i}`).toBe(0);
  });
}

/** ffmpeg decodes the stream to the encoder's reconstruction, picture after picture. */
async function expectDecodesAsReconstructed(s: Stream): Promise<void> {
  const decoded = await decodeYuv(s.file, 720, 1280);
  expect(decoded).toHaveLength(s.pictures.length);
  decoded.forEach((picture, i) =>
    expect(Buffer.compare(picture, s.reconstructions[i]!), `frame ${i}`).toBe(0),
  );
}

describe('screens coded whole, kept between pictures and recordings', () => {
  it('writes a screen that comes back after it left the references from the cache: the bytes coding it again writes', async () => {
    // One reference: a screen two pictures back can only be coded again, or taken from the cache.
    const frames = [launcher, login, settings, login, launcher, settings, typed, login];
    const cache = new ScreenCache();
    const kept = stream(frames, { screenCache: cache, references: 1 });
    const coded = stream(frames, { references: 1 });
    expectSameStream(kept, coded);
    // Login and Settings again; the launcher's first picture was an IDR picture, a kind of its own.
    expect(kept.hits).toBe(2);
    expect(kept.pictures[3]!.codedMacroblocks).toBe(3600);
    // A decoder shows what the encoder reconstructed, picture after picture.
    await expectDecodesAsReconstructed(kept);
    expect(await decodeErrors(kept.file)).toBe('');
  });

  it('a later stream takes the screens an earlier one coded, in another order, at other frame numbers', async () => {
    const cache = new ScreenCache();
    stream([launcher, login, settings], { screenCache: cache });
    const later = stream([launcher, settings, login, typed], { screenCache: cache });
    expectSameStream(later, stream([launcher, settings, login, typed]));
    // The launcher's IDR picture, then Settings and Login as P pictures after other screens.
    expect(later.hits).toBe(3);
    await expectDecodesAsReconstructed(later);
  });

  it('keeps a screen only for what shapes its bytes: the same pixels, QP and size', () => {
    const cache = new ScreenCache();
    stream([launcher, login], { screenCache: cache });
    // 2 Mbit/s codes at another QP.
    const coarser = stream([launcher, login], { screenCache: cache, bitRate: 2_000_000 });
    expect(coarser.hits).toBe(0);
    expectSameStream(coarser, stream([launcher, login], { bitRate: 2_000_000 }));
    const one = new Uint8Array(launcher);
    one[4 * (720 * 700 + 360)]! ^= 1; // one pixel's red
    expect(stream([one], { screenCache: cache }).hits).toBe(0);
    const small = new H264Encoder({ width: 360, height: 640, bitRate: 20_000_000, screenCache: cache });
    const before = cache.size;
    small.encode(new Uint8Array(360 * 640 * 4), 0);
    expect(cache.size).toBe(before + 1);
  });

  it('codes only a new screen whole: a small change is still coded where it changed', () => {
    const cache = new ScreenCache();
    const s = stream([launcher, login, typed, session[3]!], { screenCache: cache });
    expect(s.pictures[1]!.codedMacroblocks).toBe(3600);
    // The field takes the focus and its first letter, then one letter more.
    expect(s.pictures[2]!.codedMacroblocks).toBeLessThan(200);
    expect(s.pictures[3]!.codedMacroblocks).toBeLessThan(20);
    // The IDR picture and the new screen; the typed letters are not kept.
    expect(cache.size).toBe(2);
  });

  it('forgets the screens used longest ago past its bytes', () => {
    // Room for two 720x1280 screens, not three.
    const cache = new ScreenCache({ maxBytes: 4 * 1024 * 1024 });
    stream([launcher], { screenCache: cache });
    stream([login], { screenCache: cache });
    expect(stream([launcher], { screenCache: cache }).hits).toBe(1); // the launcher is now the newest
    stream([settings], { screenCache: cache }); // forgets Login
    expect(cache.size).toBe(2);
    expect(stream([launcher], { screenCache: cache }).hits).toBe(1);
    expect(stream([login], { screenCache: cache }).hits).toBe(0);
    expect(
      new ScreenCache({ maxBytes: 1024 }).keep('k', {
        data: new Uint8Array(10),
        bits: 80,
        codedMacroblocks: 1,
        state: {
          recY: new Uint8Array(2048),
          recU: new Uint8Array(0),
          recV: new Uint8Array(0),
          coded: new Uint8Array(0),
          lumaTotals: new Uint8Array(0),
          chromaTotals: new Uint8Array(0),
          i4Modes: new Int8Array(0),
        },
      }),
    ).toBe(false);
  });

  it('a thread draws a new recording’s screens over the last one’s, and encodes the same bytes', () => {
    const ui = phoneUi();
    const lists: DisplayList[] = [ui.displayList!()];
    ui.launch('com.phonelease.login');
    lists.push(ui.displayList!());
    tapId(ui, 'com.phonelease.login:id/username');
    ui.text('d');
    lists.push(ui.displayList!());
    const config = {
      screenWidth: 720,
      screenHeight: 1280,
      videoWidth: 720,
      videoHeight: 1280,
      bitRate: 20_000_000,
      maxFps: 30,
    };
    const keep = new ThreadKeep();
    const earlier = new FramePipeline(config, keep);
    earlier.encodeDrawing(lists[0]!, 0);
    earlier.encodeDrawing(lists[1]!, 100);
    earlier.encodeDrawing(lists[2]!, 200); // the thread's canvas now shows the typed letter
    // The next recording starts on the launcher, as the earlier one did: drawn over the last
    // screen only where it differs, and written from the cache; then Login.
    const find = vi.spyOn(keep.codedScreens, 'find');
    const next = new FramePipeline(config, keep);
    const fresh = new FramePipeline(config);
    for (const [i, list] of [lists[0]!, lists[1]!].entries()) {
      const kept = next.encodeDrawing(list, i * 100);
      const want = fresh.encodeDrawing(list, i * 100);
      expect(kept.nalUnits.map((n) => Buffer.from(n))).toEqual(want.nalUnits.map((n) => Buffer.from(n)));
    }
    expect(find.mock.results.filter((r) => r.value !== null)).toHaveLength(2);
  });
});

describe('reference pictures’ memory, kept for the next pictures and the next encoder', () => {
  const frames = [launcher, login, typed, session[3]!, settings, login, launcher];

  it('a released encoder leaves its references to the next, whose stream is what fresh memory gives', async () => {
    const spares = new SparePictures();
    // Memory that held other screens: the launcher, Settings and noise.
    const noise = new Uint8Array(720 * 1280 * 4).map((_, i) => (i * 2654435761) >>> 24);
    stream([noise, settings, launcher, noise], { spares });
    expect(spares.size).toBe(4);
    const reused = stream(frames, { spares });
    expectSameStream(reused, stream(frames));
    expect(spares.size).toBe(7);
    await expectDecodesAsReconstructed(reused);
  });

  it('an IDR picture leaves the references it empties to the pictures after it', () => {
    const spares = new SparePictures();
    const take = vi.spyOn(spares, 'takePixels');
    // An IDR picture every 250 ms: pictures 0, 3 and 6.
    const s = stream(frames, { spares, idrIntervalMs: 250 });
    expect(s.pictures.map((p) => p.keyframe)).toEqual([true, false, false, true, false, false, true]);
    expectSameStream(s, stream(frames, { idrIntervalMs: 250 }));
    // Seven pictures, never more than three references at once: three buffers went round.
    const buffers = new Set(take.mock.results.map((r) => r.value as Buffer));
    expect(take).toHaveBeenCalledTimes(7);
    expect(buffers.size).toBe(3);
  });

  it('refuses to encode after it was released', () => {
    const encoder = new H264Encoder({ width: 720, height: 1280, bitRate: 20_000_000 });
    encoder.encode(launcher, 0);
    encoder.release();
    expect(() => encoder.encode(login, 100)).toThrow(/released/);
  });
});
