/**
 * Recordings that begin alike (every test's phone starts on the same home screen and most
 * open the same app) reuse the opening pictures an earlier recording encoded: the bytes
 * must be exactly what encoding them again would write, and what follows must be too.
 */
import { describe, expect, it } from 'vitest';
import { H264Encoder, type EncodedPicture } from '../../server/devices/virtual/video/h264/encoder.js';
import { OpeningCache } from '../../server/devices/virtual/video/h264/openings.js';
import { FramePipeline, ThreadKeep } from '../../server/devices/virtual/video/frame-encoder.js';
import type { DisplayList } from '../../server/devices/virtual/ui/display-list.js';
import { phoneSession, phoneUi, tapId } from '../support/video.js';

const session = phoneSession();
const [launcher, login, typed1, typed2, typed3] = session as [
  Uint8Array,
  Uint8Array,
  Uint8Array,
  Uint8Array,
  Uint8Array,
];

interface Stream {
  pictures: EncodedPicture[];
  /** Y, Cb and Cr of the encoder's reconstruction after each picture. */
  reconstructions: Buffer[];
}

/** Encodes `frames` at these times (ms) with a new encoder. */
function stream(
  frames: Uint8Array[],
  times: number[],
  options: { openings?: OpeningCache; bitRate?: number; idrIntervalMs?: number } = {},
): Stream {
  const encoder = new H264Encoder({
    width: 720,
    height: 1280,
    bitRate: options.bitRate ?? 20_000_000,
    idrIntervalMs: options.idrIntervalMs ?? 5000,
    ...(options.openings ? { openings: options.openings } : {}),
  });
  const pictures: EncodedPicture[] = [];
  const reconstructions: Buffer[] = [];
  frames.forEach((frame, i) => {
    pictures.push(encoder.encode(frame, times[i]!));
    const r = encoder.reconstruction();
    reconstructions.push(Buffer.concat([r.y, r.u, r.v]));
  });
  return { pictures, reconstructions };
}

const slice = (p: EncodedPicture) => p.nalUnits.at(-1)!;

function expectSameStream(actual: Stream, expected: Stream): void {
  expect(actual.pictures).toHaveLength(expected.pictures.length);
  actual.pictures.forEach((picture, i) => {
    const want = expected.pictures[i]!;
    expect({ keyframe: picture.keyframe, qp: picture.qp }, `picture ${i}`).toEqual({
      keyframe: want.keyframe,
      qp: want.qp,
    });
    expect(picture.nalUnits.length, `picture ${i}`).toBe(want.nalUnits.length);
    picture.nalUnits.forEach((nal, n) =>
      expect(Buffer.compare(nal, want.nalUnits[n]!), `picture ${i} NAL ${n}`).toBe(0),
    );
    expect(Buffer.compare(actual.reconstructions[i]!, expected.reconstructions[i]!), `picture ${i}`).toBe(0);
  });
}

describe('opening pictures kept between recordings', () => {
  it('a stream that begins as the last one did takes its pictures, byte for byte what encoding writes', () => {
    const openings = new OpeningCache();
    const first = stream([launcher, login, launcher], [0, 120, 400], { openings });
    // Another recording, at other times, begins the same and then goes its own way; a
    // periodic IDR picture later codes macroblocks that did not change since the kept ones.
    const frames = [launcher, login, typed1, typed2, typed3, typed3];
    const times = [1000, 1050, 1300, 1400, 1500, 2200];
    const again = stream(frames, times, { openings, idrIntervalMs: 1000 });

    // Its first two pictures are the ones kept (the same bytes, not encoded again) ...
    expect(slice(again.pictures[0]!)).toBe(slice(first.pictures[0]!));
    expect(slice(again.pictures[1]!)).toBe(slice(first.pictures[1]!));
    expect(slice(again.pictures[2]!)).not.toBe(slice(first.pictures[2]!));
    // ... and the whole stream is what an encoder that keeps nothing writes.
    expect(again.pictures[5]!.keyframe).toBe(true);
    expectSameStream(again, stream(frames, times, { idrIntervalMs: 1000 }));
  });

  it('keeps a picture only where everything that shapes its bytes is the same: pixels, QP, size', () => {
    const openings = new OpeningCache();
    const first = stream([launcher, login], [0, 100], { openings });
    // Another screen first: nothing kept applies.
    const other = stream([login, launcher], [0, 100], { openings });
    expect(slice(other.pictures[0]!)).not.toBe(slice(first.pictures[0]!));
    expectSameStream(other, stream([login, launcher], [0, 100]));
    // The same screen at a lower bit rate is another QP.
    const coarser = stream([launcher, login], [0, 100], { openings, bitRate: 2_000_000 });
    expect(coarser.pictures[0]!.qp).not.toBe(first.pictures[0]!.qp);
    expectSameStream(coarser, stream([launcher, login], [0, 100], { bitRate: 2_000_000 }));
    // Both streams' openings are still there.
    expect(slice(stream([login], [0], { openings }).pictures[0]!)).toBe(slice(other.pictures[0]!));
  });

  it('keeps the first three pictures of a stream, and forgets the least recently used past its bytes', () => {
    const openings = new OpeningCache();
    const frames = [launcher, login, typed1, typed2];
    const first = stream(frames, [0, 100, 200, 300], { openings });
    const again = stream(frames, [0, 100, 200, 300], { openings });
    expect(again.pictures.slice(0, 3).map(slice)).toEqual(first.pictures.slice(0, 3).map(slice));
    expect(slice(again.pictures[3]!)).not.toBe(slice(first.pictures[3]!));

    // Room for about two pictures: a third stream's opening forgets the oldest one.
    const small = new OpeningCache({ maxBytes: 12 * 1024 * 1024 });
    const a = stream([launcher], [0], { openings: small });
    const b = stream([login], [0], { openings: small });
    expect(slice(stream([launcher], [0], { openings: small }).pictures[0]!)).toBe(slice(a.pictures[0]!));
    stream([typed1], [0], { openings: small }); // forgets `login`, used longest ago
    expect(slice(stream([launcher], [0], { openings: small }).pictures[0]!)).toBe(slice(a.pictures[0]!));
    expect(slice(stream([login], [0], { openings: small }).pictures[0]!)).not.toBe(slice(b.pictures[0]!));
  });

  it('a thread draws a new recording’s first screen over the last one’s, and encodes the same bytes', () => {
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
    earlier.encodeDrawing(lists[2]!, 100); // the thread's canvas now shows the typed letter
    // The next recording starts on the Login screen: drawn over the last screen, only where
    // it differs; then the launcher again.
    const next = new FramePipeline(config, keep);
    const fresh = new FramePipeline(config);
    for (const [i, list] of [lists[1]!, lists[0]!].entries()) {
      const kept = next.encodeDrawing(list, i * 100);
      const want = fresh.encodeDrawing(list, i * 100);
      expect(kept.nalUnits.map((n) => Buffer.from(n))).toEqual(want.nalUnits.map((n) => Buffer.from(n)));
    }
  });
});
