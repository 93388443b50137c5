/**
 * The MP4 writer, reader and joiner (src/video), judged by ffprobe and ffmpeg: files the
 * writer streams out are complete only once finished, as a phone's are; joined recordings
 * play as one, whoever encoded the pieces.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { H264Encoder } from '../../server/devices/virtual/video/h264/encoder.js';
import { ScreenScaler } from '../../server/devices/virtual/video/scale.js';
import { MemorySink, bufferSource } from '../../src/video/io.js';
import { joinMp4 } from '../../src/video/mp4-join.js';
import { readMp4 } from '../../src/video/mp4-read.js';
import { Mp4Writer, ftypBox, moovBox, patchMdatSize } from '../../src/video/mp4-write.js';
import { Mp4FormatError } from '../../src/video/box.js';
import {
  decodeErrors,
  decodeYuv,
  frameHashes,
  libx264,
  packets,
  phoneSession,
  probe,
  readBytes,
  run,
} from '../support/video.js';

const W = 360;
const H = 640;
const dir = mkdtempSync(join(tmpdir(), 'phonelease-mp4-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Phone screens at W x H, as `screenrecord --size 360x640` would see them. */
const screens = (() => {
  const scaler = new ScreenScaler(720, 1280, W, H);
  return phoneSession().map((f) => scaler.scale(f).slice());
})();

interface Recorded {
  bytes: Uint8Array;
  /** Each frame's reconstruction, Y then Cb then Cr: what a decoder must show. */
  pictures: Uint8Array[];
}

/** Encodes `frames` shown at `timesMs` into an MP4 that ends at `endMs`. */
async function record(
  frames: Uint8Array[],
  timesMs: number[],
  endMs: number,
  encoders: (i: number) => H264Encoder = (() => {
    const e = new H264Encoder({ width: W, height: H, bitRate: 20_000_000 });
    return () => e;
  })(),
): Promise<Recorded> {
  const sink = new MemorySink();
  const writer = await Mp4Writer.start(sink, { width: W, height: H });
  const pictures: Uint8Array[] = [];
  for (let i = 0; i < frames.length; i++) {
    const encoder = encoders(i);
    const picture = encoder.encode(frames[i]!, timesMs[i]!);
    await writer.addFrame({ nalUnits: picture.nalUnits, timeUs: timesMs[i]! * 1000 });
    const r = encoder.reconstruction();
    pictures.push(Buffer.concat([r.y, r.u, r.v]));
  }
  await writer.finish(endMs * 1000);
  return { bytes: sink.bytes(), pictures };
}

function save(name: string, bytes: Uint8Array): string {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

describe('streaming writer', () => {
  const times = [0, 100, 130, 500, 520, 1000, 1400, 1450, 1800];

  it('writes a file ffprobe reads as H.264 with its size, frame count and duration', async () => {
    const { bytes } = await record(screens, times, 2000);
    const file = save('phone.mp4', bytes);
    const { stream, duration } = await probe(file);
    expect(stream.codec_name).toBe('h264');
    expect([stream.width, stream.height]).toEqual([W, H]);
    expect(Number(stream.nb_read_frames)).toBe(screens.length);
    expect(duration).toBeCloseTo(2.0, 3);
    expect(await decodeErrors(file)).toBe('');
  });

  it('keeps each frame for as long as the screen showed it (variable frame durations)', async () => {
    const file = save('timing.mp4', (await record(screens, times, 2000)).bytes);
    const got = await packets(file);
    expect(got.map((p) => p.pts)).toEqual(times.map((t) => t / 1000));
    const durations = times.map((t, i) => ((times[i + 1] ?? 2000) - t) / 1000);
    got.forEach((p, i) => expect(p.duration).toBeCloseTo(durations[i]!, 4));
    expect(got.map((p) => p.key)).toEqual(times.map((_, i) => i === 0));
  });

  it('is unreadable until finished, like a recording whose recorder was killed', async () => {
    const sink = new MemorySink();
    const writer = await Mp4Writer.start(sink, { width: W, height: H });
    const encoder = new H264Encoder({ width: W, height: H, bitRate: 20_000_000 });
    for (let i = 0; i < 3; i++) {
      await writer.addFrame({ nalUnits: encoder.encode(screens[i]!, i * 100).nalUnits, timeUs: i * 100_000 });
    }
    const cut = save('cut.mp4', sink.bytes());
    const probed = await run('ffprobe', ['-v', 'error', cut]);
    expect(probed.code).not.toBe(0);
    expect(probed.stderr).toContain('moov atom not found');
    await expect(readMp4(bufferSource(sink.bytes()), 'cut.mp4')).rejects.toThrow(Mp4FormatError);
    await expect(readMp4(bufferSource(sink.bytes()), 'cut.mp4')).rejects.toThrow(
      /cut off before it was finished/,
    );

    await writer.finish(300_000);
    const whole = save('whole.mp4', sink.bytes());
    expect((await probe(whole)).stream.nb_read_frames).toBe('3');
  });

  it('reads back the samples it wrote', async () => {
    const { bytes } = await record(screens, times, 2000);
    const { brands, track } = await readMp4(bufferSource(bytes));
    expect(brands).toEqual(['mp42', 'isom', 'mp42']);
    expect(track.timescale).toBe(90_000);
    expect([track.width, track.height]).toEqual([W, H]);
    expect(track.samples.map((s) => s.duration)).toEqual(
      times.map((t, i) => ((times[i + 1] ?? 2000) - t) * 90),
    );
    expect(track.samples.map((s) => s.sync)).toEqual(times.map((_, i) => i === 0));
    // Samples lie back to back in the mdat, in order.
    track.samples
      .slice(1)
      .forEach((s, i) => expect(s.offset).toBe(track.samples[i]!.offset + track.samples[i]!.size));
  });

  it('starts a new sample entry when the SPS changes, and the file still decodes picture for picture', async () => {
    // Two bit rates give two levels, so two different SPS for the same picture size.
    const low = new H264Encoder({ width: W, height: H, bitRate: 1_000_000 });
    const high = new H264Encoder({ width: W, height: H, bitRate: 20_000_000 });
    const frames = screens.slice(0, 6);
    const { bytes, pictures } = await record(frames, [0, 100, 200, 300, 400, 500], 600, (i) =>
      i < 3 ? low : high,
    );
    const { track } = await readMp4(bufferSource(bytes));
    expect(track.entries).toHaveLength(2);
    expect(track.samples.map((s) => s.entry)).toEqual([0, 0, 0, 1, 1, 1]);
    const file = save('two-entries.mp4', bytes);
    expect(await decodeErrors(file)).toBe('');
    const decoded = await decodeYuv(file, W, H);
    expect(decoded).toHaveLength(6);
    decoded.forEach((picture, i) => expect(Buffer.compare(picture, pictures[i]!), `frame ${i}`).toBe(0));
  });
});

describe('files past 4 GiB', () => {
  it('index samples with 64-bit chunk offsets and give the mdat a 64-bit size', async () => {
    // A 30-minute recording at 20 Mbit/s is 4.5 GB: its samples lie past 32-bit offsets.
    const far = 2 ** 32 + 1000;
    const entry = (await readMp4(bufferSource((await record(screens.slice(0, 1), [0], 100)).bytes))).track
      .entries[0]!;
    const track = {
      timescale: 90_000,
      width: W,
      height: H,
      entries: [entry],
      samples: [0, 1, 2].map((i) => ({
        offset: far + i * 500,
        size: 500,
        duration: 3000,
        compositionOffset: 0,
        sync: i === 0,
        entry: 0,
      })),
      mediaTime: 0,
    };
    const moov = moovBox(track);
    // A file of ftyp, an mdat reaching past 4 GiB, then the index, read through a source that
    // holds only those three boxes' headers and contents.
    const ftyp = ftypBox();
    const moovAt = far + 1500;
    const mdatHeader = new DataView(new ArrayBuffer(16));
    mdatHeader.setUint32(0, 1);
    mdatHeader.setUint32(4, 0x6d646174); // 'mdat', its 64-bit size follows
    mdatHeader.setBigUint64(8, BigInt(moovAt - ftyp.length));
    const boxes = new Map([
      [0, ftyp],
      [ftyp.length, new Uint8Array(mdatHeader.buffer)],
      [moovAt, moov],
    ]);
    const read = await readMp4({
      size: moovAt + moov.length,
      read: async (position, length) => (boxes.get(position) ?? new Uint8Array(length)).subarray(0, length),
    });
    expect(read.track.samples.map((s) => s.offset)).toEqual([far, far + 500, far + 1000]);
    expect(new TextDecoder().decode(moov)).toContain('co64');

    const patches: Array<[number, Uint8Array]> = [];
    const sink = {
      append: async () => undefined,
      patch: async (at: number, bytes: Uint8Array) => void patches.push([at, bytes]),
    };
    await patchMdatSize(sink, 32, far);
    expect(patches).toHaveLength(1);
    const [at, bytes] = patches[0]!;
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    // The free + mdat header pair becomes one 16-byte mdat header with a 64-bit size.
    expect([
      at,
      view.getUint32(0),
      new TextDecoder().decode(bytes.subarray(4, 8)),
      view.getBigUint64(8),
    ]).toEqual([32, 1, 'mdat', BigInt(far)]);
  });
});

describe('joinMp4', () => {
  it('joins our recording and two libx264 files into one that plays them back to back', async () => {
    const ours = save('piece-1.mp4', (await record(screens, times(screens.length, 110), 1100)).bytes);
    const baseline = join(dir, 'piece-2.mp4');
    // A second track's data between the video's, as phones' metadata tracks put there.
    await libx264(baseline, {
      width: W,
      height: H,
      seconds: 1,
      fps: 30,
      profile: 'baseline',
      subtitles: true,
    });
    const bframes = join(dir, 'piece-3.mp4');
    await libx264(bframes, {
      width: W,
      height: H,
      seconds: 1.2,
      fps: 25,
      profile: 'high',
      pattern: 'testsrc',
    });
    const pieces = [ours, baseline, bframes];
    const output = join(dir, 'joined.mp4');

    const summary = await joinMp4(pieces, output);

    const probes = await Promise.all(pieces.map(probe));
    const joined = await probe(output);
    const frames = probes.reduce((n, p) => n + Number(p.stream.nb_read_frames), 0);
    expect(Number(joined.stream.nb_read_frames)).toBe(frames);
    expect(summary.frames).toBe(frames);
    const total = probes.reduce((t, p) => t + p.duration, 0);
    expect(Math.abs(joined.duration - total)).toBeLessThan(1 / 25);
    expect(await decodeErrors(output)).toBe('');
    // The joined file shows exactly the pieces' pictures, in order.
    const expected = (await Promise.all(pieces.map(frameHashes))).flat();
    expect(await frameHashes(output)).toEqual(expected);

    const { track } = await readMp4(bufferSource(readBytes(output)));
    expect(track.entries).toHaveLength(3);
    const starts = [
      0,
      Number(probes[0]!.stream.nb_read_frames),
      Number(probes[0]!.stream.nb_read_frames) + Number(probes[1]!.stream.nb_read_frames),
    ];
    for (const [piece, start] of starts.entries()) {
      expect(track.samples[start]!.sync).toBe(true);
      expect(track.samples[start]!.entry).toBe(piece);
    }
    // Decode times run on from piece to piece.
    const got = await packets(output);
    for (let i = 1; i < got.length; i++) expect(got[i]!.pts).not.toBe(got[i - 1]!.pts);
  });

  it('keeps one sample entry for pieces with the same SPS and PPS', async () => {
    const a = save('same-1.mp4', (await record(screens.slice(0, 3), [0, 100, 200], 300)).bytes);
    const b = save('same-2.mp4', (await record(screens.slice(3, 6), [0, 100, 200], 300)).bytes);
    const output = join(dir, 'same.mp4');
    await joinMp4([a, b], output);
    const { track } = await readMp4(bufferSource(readBytes(output)));
    expect(track.entries).toHaveLength(1);
    expect(track.samples.map((s) => s.sync)).toEqual([true, false, false, true, false, false]);
    expect((await probe(output)).duration).toBeCloseTo(0.6, 3);
    expect(await decodeErrors(output)).toBe('');
  });

  it('refuses a piece that was cut off, naming it, and writes nothing', async () => {
    const whole = save('ok.mp4', (await record(screens.slice(0, 2), [0, 100], 200)).bytes);
    const bytes = readBytes(whole);
    const cut = save('cut-piece.mp4', bytes.subarray(0, bytes.length - 200));
    const output = join(dir, 'never.mp4');
    await expect(joinMp4([whole, cut], output)).rejects.toThrow(/cut-piece\.mp4/);
    expect(existsSync(output)).toBe(false);
  });

  it('refuses to write over one of its pieces', async () => {
    const piece = save('self.mp4', (await record(screens.slice(0, 2), [0, 100], 200)).bytes);
    await expect(joinMp4([piece], piece)).rejects.toThrow(/one of the pieces/);
    expect((await probe(piece)).stream.nb_read_frames).toBe('2');
  });
});

/** n times `step` ms apart from 0. */
function times(n: number, step: number): number[] {
  return Array.from({ length: n }, (_, i) => i * step);
}
