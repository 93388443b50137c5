/**
 * Writing an MP4 with one H.264 video track.
 *
 * The file is laid out as Android's MediaMuxer lays out `screenrecord`'s: ftyp, then the
 * samples in one mdat as they arrive, then the index (moov) once recording ends, and finally
 * the mdat's size patched in. Until then the file is a valid prefix that says what it is
 * (an mdat "to the end of the file") but has no index, so players refuse it, as they refuse
 * a phone's recording whose `screenrecord` was killed before it finished.
 */
import { Fields, box, fullBox } from './box.js';
import type { ByteSink } from './io.js';
import {
  NAL,
  avcDecoderConfiguration,
  nalType,
  sameBytes,
  sampleEntryBox,
  toLengthPrefixed,
  type AvcSampleEntry,
  type ColourDescription,
  type VideoSample,
  type VideoTrack,
} from './track.js';

/** Android's MPEG4Writer uses 90 kHz for video, which divides every common frame rate. */
export const VIDEO_TIMESCALE = 90_000;
const MOVIE_TIMESCALE = 1000;
/** Samples per chunk at most: small enough for a player to seek, large enough to keep stco short. */
const MAX_SAMPLES_PER_CHUNK = 64;
const UNITY_MATRIX = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000];
const U32_MAX = 0xffffffff;

/** 'mp42' with 'isom' and 'mp42' compatible, as MediaMuxer writes. */
export function ftypBox(): Uint8Array {
  return box('ftyp', new Fields().fourcc('mp42').u32(0).fourcc('isom').fourcc('mp42').toBytes());
}

/** Seconds since 1904-01-01, the epoch of MP4 times. */
function mp4Time(date: Date | undefined): number {
  return date ? Math.max(0, Math.floor(date.getTime() / 1000) + 2_082_844_800) : 0;
}

function rescale(value: number, from: number, to: number): number {
  return Math.round((value * to) / from);
}

/** Runs of equal values, as stts and ctts store them: [count, value][]. */
function runs(values: readonly number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const v of values) {
    const last = out[out.length - 1];
    if (last && last[1] === v) last[0]++;
    else out.push([1, v]);
  }
  return out;
}

interface Chunk {
  offset: number;
  samples: number;
  entry: number;
}

/** Consecutive samples that lie back to back in the file and share a sample entry. */
function chunksOf(samples: readonly VideoSample[]): Chunk[] {
  const chunks: Chunk[] = [];
  let end = -1;
  for (const s of samples) {
    const last = chunks[chunks.length - 1];
    if (last && s.offset === end && s.entry === last.entry && last.samples < MAX_SAMPLES_PER_CHUNK) {
      last.samples++;
    } else {
      chunks.push({ offset: s.offset, samples: 1, entry: s.entry });
    }
    end = s.offset + s.size;
  }
  return chunks;
}

function sampleTable(track: VideoTrack): Uint8Array {
  const samples = track.samples;
  const stsd = fullBox(
    'stsd',
    0,
    0,
    new Fields().u32(track.entries.length).toBytes(),
    ...track.entries.map(sampleEntryBox),
  );

  const timing = runs(samples.map((s) => s.duration));
  const stts = fullBox(
    'stts',
    0,
    0,
    timing.reduce((f, [count, delta]) => f.u32(count).u32(delta), new Fields().u32(timing.length)).toBytes(),
  );

  const boxes = [stsd, stts];
  if (samples.some((s) => s.compositionOffset !== 0)) {
    const offsets = runs(samples.map((s) => s.compositionOffset));
    // Version 1 stores signed offsets; version 0 is what older players expect when none is negative.
    const signed = offsets.some(([, v]) => v < 0);
    boxes.push(
      fullBox(
        'ctts',
        signed ? 1 : 0,
        0,
        offsets
          .reduce(
            (f, [count, v]) => (signed ? f.u32(count).i32(v) : f.u32(count).u32(v)),
            new Fields().u32(offsets.length),
          )
          .toBytes(),
      ),
    );
  }

  // Without stss every sample is a sync sample; write it whenever that is not so.
  if (samples.some((s) => !s.sync)) {
    const sync = samples.flatMap((s, i) => (s.sync ? [i + 1] : []));
    boxes.push(
      fullBox('stss', 0, 0, sync.reduce((f, n) => f.u32(n), new Fields().u32(sync.length)).toBytes()),
    );
  }

  const chunks = chunksOf(samples);
  const stsc = new Fields();
  const stscRows: Array<[number, number, number]> = [];
  chunks.forEach((c, i) => {
    const last = stscRows[stscRows.length - 1];
    if (!last || last[1] !== c.samples || last[2] !== c.entry + 1)
      stscRows.push([i + 1, c.samples, c.entry + 1]);
  });
  stsc.u32(stscRows.length);
  for (const [first, count, entry] of stscRows) stsc.u32(first).u32(count).u32(entry);
  boxes.push(fullBox('stsc', 0, 0, stsc.toBytes()));

  boxes.push(
    fullBox(
      'stsz',
      0,
      0,
      samples.reduce((f, s) => f.u32(s.size), new Fields().u32(0).u32(samples.length)).toBytes(),
    ),
  );

  const large = chunks.some((c) => c.offset > U32_MAX);
  boxes.push(
    fullBox(
      large ? 'co64' : 'stco',
      0,
      0,
      chunks
        .reduce((f, c) => (large ? f.u64(c.offset) : f.u32(c.offset)), new Fields().u32(chunks.length))
        .toBytes(),
    ),
  );
  return box('stbl', ...boxes);
}

/** A version 0 or 1 full box header's times and duration, whichever the duration needs. */
function timesAndDuration(
  f: Fields,
  version: number,
  created: number,
  timescale: number,
  duration: number,
): Fields {
  if (version === 1) return f.u64(created).u64(created).u32(timescale).u64(duration);
  return f.u32(created).u32(created).u32(timescale).u32(duration);
}

export interface MoovOptions {
  /** Written as the file's creation time; 0 (unknown) when omitted, so output is reproducible. */
  creationTime?: Date;
}

/** The moov box (the index) for one video track whose samples are already in the file. */
export function moovBox(track: VideoTrack, options: MoovOptions = {}): Uint8Array {
  const created = mp4Time(options.creationTime);
  const mediaDuration = track.samples.reduce((n, s) => n + s.duration, 0);
  const movieDuration = rescale(mediaDuration, track.timescale, MOVIE_TIMESCALE);
  const movieVersion = movieDuration > U32_MAX ? 1 : 0;
  const mediaVersion = mediaDuration > U32_MAX ? 1 : 0;

  const mvhd = fullBox(
    'mvhd',
    movieVersion,
    0,
    timesAndDuration(new Fields(), movieVersion, created, MOVIE_TIMESCALE, movieDuration)
      .u32(0x00010000) // rate 1.0
      .u16(0x0100) // volume 1.0
      .zeros(10)
      .bytes(UNITY_MATRIX.reduce((f, v) => f.u32(v), new Fields()).toBytes())
      .zeros(24)
      .u32(2) // next track ID
      .toBytes(),
  );

  const tkhdFields = new Fields();
  if (movieVersion === 1) tkhdFields.u64(created).u64(created).u32(1).u32(0).u64(movieDuration);
  else tkhdFields.u32(created).u32(created).u32(1).u32(0).u32(movieDuration);
  const tkhd = fullBox(
    'tkhd',
    movieVersion,
    3, // enabled, in the movie
    tkhdFields
      .zeros(8)
      .u16(0) // layer
      .u16(0) // alternate group
      .u16(0) // volume: video has none
      .u16(0)
      .bytes(UNITY_MATRIX.reduce((f, v) => f.u32(v), new Fields()).toBytes())
      .u32(track.width * 0x10000)
      .u32(track.height * 0x10000)
      .toBytes(),
  );

  const trakChildren = [tkhd];
  if (track.mediaTime > 0) {
    // B-frames: the first picture is presented mediaTime after the first sample is decoded.
    const elst = fullBox(
      'elst',
      0,
      0,
      new Fields().u32(1).u32(movieDuration).u32(track.mediaTime).u16(1).u16(0).toBytes(),
    );
    trakChildren.push(box('edts', elst));
  }

  const mdhd = fullBox(
    'mdhd',
    mediaVersion,
    0,
    timesAndDuration(new Fields(), mediaVersion, created, track.timescale, mediaDuration)
      .u16(0x55c4) // language 'und', packed as three 5-bit letters
      .u16(0)
      .toBytes(),
  );
  const hdlr = fullBox(
    'hdlr',
    0,
    0,
    new Fields().u32(0).fourcc('vide').zeros(12).bytes(new TextEncoder().encode('VideoHandle\0')).toBytes(),
  );
  const vmhd = fullBox('vmhd', 0, 1, new Fields().zeros(8).toBytes());
  const dinf = box('dinf', fullBox('dref', 0, 0, new Fields().u32(1).toBytes(), fullBox('url ', 0, 1)));
  const minf = box('minf', vmhd, dinf, sampleTable(track));
  trakChildren.push(box('mdia', mdhd, hdlr, minf));

  return box('moov', mvhd, box('trak', ...trakChildren));
}

export interface Mp4WriterOptions extends MoovOptions {
  /** The picture size (the avc1 entry and track header carry it). */
  width: number;
  height: number;
  /** Colour description for the sample entry's colr box (as the stream's VUI says it). */
  colour?: ColourDescription;
  /** Ticks per second of sample durations; 90 kHz by default. */
  timescale?: number;
}

/** One encoded picture: its NAL units (SPS and PPS among them when they are new) and when it was shown. */
export interface EncodedFrame {
  nalUnits: readonly Uint8Array[];
  /** Presentation time in microseconds, on any clock that only moves forward. */
  timeUs: number;
}

export interface Mp4Summary {
  /** Bytes in the finished file. */
  bytes: number;
  frames: number;
  /** From the first frame to the end, as the file's duration says. */
  durationUs: number;
}

/**
 * Streams frames into an MP4 as they are encoded. SPS and PPS NAL units go into the sample
 * entry's avcC (as MediaMuxer puts the codec's configuration there); a changed SPS/PPS
 * starts a new sample entry, so the file stays playable.
 */
export class Mp4Writer {
  private readonly timescale: number;
  private readonly entries: AvcSampleEntry[] = [];
  private readonly samples: VideoSample[] = [];
  /** Each sample's decode time in ticks from the first. */
  private readonly ticks: number[] = [];
  private sps: Uint8Array[] = [];
  private pps: Uint8Array[] = [];
  private firstUs: number | null = null;
  private position: number;
  private finished: Promise<Mp4Summary> | null = null;

  private constructor(
    private readonly sink: ByteSink,
    private readonly options: Mp4WriterOptions,
    private readonly mdatAt: number,
  ) {
    this.timescale = options.timescale ?? VIDEO_TIMESCALE;
    // The 16-byte free + mdat header pair, then samples.
    this.position = mdatAt + 16;
  }

  /** Writes the file's header to `sink`; frames follow with addFrame(). */
  static async start(sink: ByteSink, options: Mp4WriterOptions): Promise<Mp4Writer> {
    if (!(options.width > 0 && options.height > 0))
      throw new RangeError('an MP4 video needs a width and height');
    const ftyp = ftypBox();
    // An 8-byte free box, then an mdat whose size 0 means "to the end of the file". At the
    // end the mdat's real size is patched in; if it needs 64 bits, the two headers become
    // one 16-byte mdat header in the same place.
    await sink.append(ftyp);
    await sink.append(openMdatHeader());
    return new Mp4Writer(sink, options, ftyp.length);
  }

  get frames(): number {
    return this.samples.length;
  }

  /** Bytes written so far (what a file holding this recording measures now). */
  get size(): number {
    return this.position;
  }

  async addFrame(frame: EncodedFrame): Promise<void> {
    if (this.finished) throw new Error('this MP4 is already finished');
    const picture: Uint8Array[] = [];
    const sps: Uint8Array[] = [];
    const pps: Uint8Array[] = [];
    for (const nal of frame.nalUnits) {
      const type = nalType(nal);
      if (type === NAL.SPS) sps.push(nal);
      else if (type === NAL.PPS) pps.push(nal);
      else if (type !== NAL.AUD) picture.push(nal);
    }
    if (sps.length > 0) this.sps = sps;
    if (pps.length > 0) this.pps = pps;
    if (picture.length === 0) return;
    const entry = this.entryFor();

    if (this.firstUs === null) this.firstUs = frame.timeUs;
    const last = this.ticks[this.ticks.length - 1];
    let tick = rescale(frame.timeUs - this.firstUs, 1_000_000, this.timescale);
    // Two frames in the same tick still need an order: durations must stay positive.
    if (last !== undefined && tick <= last) tick = last + 1;

    const data = toLengthPrefixed(picture);
    this.samples.push({
      offset: this.position,
      size: data.length,
      duration: 0,
      compositionOffset: 0,
      sync: picture.some((n) => nalType(n) === NAL.IDR),
      entry,
    });
    this.ticks.push(tick);
    await this.sink.append(data);
    this.position += data.length;
  }

  /** The sample entry for the current SPS/PPS, added when they are new. */
  private entryFor(): number {
    if (this.sps.length === 0 || this.pps.length === 0) {
      throw new Error('the first frame of an H.264 recording must carry its SPS and PPS');
    }
    const avcC = avcDecoderConfiguration(this.sps, this.pps);
    const current = this.entries.length - 1;
    if (current >= 0 && sameBytes(this.entries[current]!.avcC, avcC)) return current;
    this.entries.push({
      width: this.options.width,
      height: this.options.height,
      avcC,
      colour: this.options.colour,
    });
    return this.entries.length - 1;
  }

  /**
   * Writes the index and completes the file. `endTimeUs` (on the frames' clock) is when
   * the last frame stopped showing; without it the last frame lasts as long as the one
   * before. Calling it again returns the same result.
   */
  finish(endTimeUs?: number): Promise<Mp4Summary> {
    this.finished ??= this.writeIndex(endTimeUs);
    return this.finished;
  }

  private async writeIndex(endTimeUs: number | undefined): Promise<Mp4Summary> {
    const n = this.samples.length;
    if (n === 0) throw new Error('no frames were recorded, so there is no video to finish');
    for (let i = 0; i + 1 < n; i++) this.samples[i]!.duration = this.ticks[i + 1]! - this.ticks[i]!;
    const lastTick = this.ticks[n - 1]!;
    const previous = n > 1 ? this.samples[n - 2]!.duration : Math.round(this.timescale / 30);
    const endTick =
      endTimeUs !== undefined && this.firstUs !== null
        ? rescale(endTimeUs - this.firstUs, 1_000_000, this.timescale)
        : lastTick + previous;
    this.samples[n - 1]!.duration = Math.max(1, endTick - lastTick);

    const track: VideoTrack = {
      timescale: this.timescale,
      width: this.options.width,
      height: this.options.height,
      entries: this.entries,
      samples: this.samples,
      mediaTime: 0,
    };
    const moov = moovBox(track, this.options);
    await this.sink.append(moov);
    await patchMdatSize(this.sink, this.mdatAt, this.position - this.mdatAt);

    const total = this.samples.reduce((t, s) => t + s.duration, 0);
    return {
      bytes: this.position + moov.length,
      frames: n,
      durationUs: Math.round((total * 1_000_000) / this.timescale),
    };
  }
}

/**
 * Patches the size of the free + mdat header pair written at `at`, which together span
 * `span` bytes (16 header bytes and the samples).
 */
export async function patchMdatSize(sink: ByteSink, at: number, span: number): Promise<void> {
  const mdatSize = span - 8;
  if (mdatSize <= U32_MAX) {
    await sink.patch(at + 8, new Fields().u32(mdatSize).toBytes());
  } else {
    await sink.patch(at, new Fields().u32(1).fourcc('mdat').u64(span).toBytes());
  }
}

/** The bytes of the header pair `patchMdatSize` completes: write them where the samples start. */
export function openMdatHeader(): Uint8Array {
  return new Fields().u32(8).fourcc('free').u32(0).fourcc('mdat').toBytes();
}
