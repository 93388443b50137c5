/**
 * Reading the H.264 video track of an MP4: its sample entries and where every sample is,
 * from the index alone. Sample bytes stay in the file until someone copies them, so a
 * recording of any length is read in a few small reads.
 *
 * Phones write more than video: Android 14's `screenrecord` adds two metadata tracks (frame
 * times for Winscope) beside the video. The first video track is the one read; the others
 * are left alone.
 */
import { Mp4FormatError, boxAtPath, boxesIn, childBox, fourccAt, type BoxView } from './box.js';
import type { ByteSource } from './io.js';
import type { AvcSampleEntry, VideoSample, VideoTrack } from './track.js';

export interface Mp4File {
  /** The ftyp's major brand and compatible brands. */
  brands: string[];
  track: VideoTrack;
}

/** How many bytes a top-level box header can take (size, type and a 64-bit size). */
const HEADER_BYTES = 16;

/**
 * Reads the video track of the MP4 in `source`. `name` is how errors refer to it (a path).
 * Throws Mp4FormatError when the file has no index (cut off while recording), is
 * fragmented, or has no H.264 video track.
 */
export async function readMp4(source: ByteSource, name = 'the file'): Promise<Mp4File> {
  let moov: Uint8Array | null = null;
  let brands: string[] = [];
  let at = 0;
  while (at + 8 <= source.size) {
    const head = await source.read(at, HEADER_BYTES);
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
    const type = fourccAt(head, 4);
    let size = view.getUint32(0);
    if (size === 1) {
      if (head.length < 16) break;
      size = Number(view.getBigUint64(8));
    } else if (size === 0) {
      size = source.size - at;
    }
    if (size < 8)
      throw new Mp4FormatError(`${name} is not an MP4: box '${type}' at byte ${at} has size ${size}`);
    if (type === 'moof') {
      throw new Mp4FormatError(`${name} is a fragmented MP4, which phonelease does not read`);
    }
    if (type === 'ftyp' || type === 'moov') {
      if (at + size > source.size) break;
      const bytes = await source.read(at, size);
      if (type === 'moov') moov = bytes;
      else brands = ftypBrands(bytes);
    }
    at += size;
  }
  if (!moov) {
    throw new Mp4FormatError(
      `${name} has no index (moov box): its recording was cut off before it was finished, ` +
        'and no player can read it; record again and stop the recorder before reading the file',
    );
  }
  const track = videoTrack(moov, name);
  for (const s of track.samples) {
    if (s.offset + s.size > source.size) {
      throw new Mp4FormatError(`${name} is cut off: its index points past the end of the file`);
    }
  }
  return { brands, track };
}

function ftypBrands(ftyp: Uint8Array): string[] {
  const [b] = [...boxesIn(ftyp)];
  if (!b) return [];
  const out = [fourccAt(ftyp, b.payload)];
  for (let at = b.payload + 8; at + 4 <= b.end; at += 4) out.push(fourccAt(ftyp, at));
  return out;
}

/** A reader of big-endian numbers over a box's payload. */
class Cursor {
  private readonly view: DataView;
  constructor(
    bytes: Uint8Array,
    public at: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u8(): number {
    return this.view.getUint8(this.at++);
  }
  u16(): number {
    const v = this.view.getUint16(this.at);
    this.at += 2;
    return v;
  }
  u32(): number {
    const v = this.view.getUint32(this.at);
    this.at += 4;
    return v;
  }
  i32(): number {
    const v = this.view.getInt32(this.at);
    this.at += 4;
    return v;
  }
  u64(): number {
    const v = Number(this.view.getBigUint64(this.at));
    this.at += 8;
    return v;
  }
  i64(): number {
    const v = Number(this.view.getBigInt64(this.at));
    this.at += 8;
    return v;
  }
  /** A full box's version (its flags are skipped). */
  version(): number {
    const v = this.u8();
    this.at += 3;
    return v;
  }
}

function required(bytes: Uint8Array, parent: BoxView, path: readonly string[], name: string): BoxView {
  const found = boxAtPath(bytes, parent, path);
  if (!found) throw new Mp4FormatError(`${name} has no '${path.join('/')}' in its video track`);
  return found;
}

function videoTrack(moov: Uint8Array, name: string): VideoTrack {
  const [root] = [...boxesIn(moov)];
  if (!root) throw new Mp4FormatError(`${name} has an empty index`);
  if (childBox(moov, root, 'mvex')) {
    throw new Mp4FormatError(`${name} is a fragmented MP4, which phonelease does not read`);
  }
  for (const trak of boxesIn(moov, root.payload, root.end)) {
    if (trak.type !== 'trak') continue;
    const hdlr = boxAtPath(moov, trak, ['mdia', 'hdlr']);
    if (hdlr && fourccAt(moov, hdlr.payload + 8) === 'vide') return parseTrack(moov, trak, name);
  }
  throw new Mp4FormatError(`${name} has no video track`);
}

function parseTrack(moov: Uint8Array, trak: BoxView, name: string): VideoTrack {
  const mdhd = required(moov, trak, ['mdia', 'mdhd'], name);
  const c = new Cursor(moov, mdhd.payload);
  const timescale = c.version() === 1 ? ((c.at += 16), c.u32()) : ((c.at += 8), c.u32());
  if (timescale === 0) throw new Mp4FormatError(`${name} has a video track with timescale 0`);

  const stbl = required(moov, trak, ['mdia', 'minf', 'stbl'], name);
  const entries = sampleEntries(moov, required(moov, stbl, ['stsd'], name), name);

  const tkhd = childBox(moov, trak, 'tkhd');
  let width = entries[0]?.width ?? 0;
  let height = entries[0]?.height ?? 0;
  if (tkhd) {
    const t = new Cursor(moov, tkhd.payload);
    const v1 = t.version() === 1;
    // Times, track ID and duration; reserved, layer, group, volume; the matrix.
    t.at += (v1 ? 32 : 20) + 16 + 36;
    const w = t.u32() / 0x10000;
    const h = t.u32() / 0x10000;
    if (w > 0 && h > 0) {
      width = Math.round(w);
      height = Math.round(h);
    }
  }

  return {
    timescale,
    width,
    height,
    entries,
    samples: samples(moov, stbl, entries.length, name),
    mediaTime: editMediaTime(moov, trak),
  };
}

function sampleEntries(moov: Uint8Array, stsd: BoxView, name: string): AvcSampleEntry[] {
  const out: AvcSampleEntry[] = [];
  // Full box header (4) and entry_count (4), then the entries as boxes.
  for (const entry of boxesIn(moov, stsd.payload + 8, stsd.end)) {
    if (entry.type !== 'avc1' && entry.type !== 'avc3') {
      throw new Mp4FormatError(
        `${name} holds '${entry.type}' video, not H.264; only H.264 recordings can be read`,
      );
    }
    const view = new DataView(moov.buffer, moov.byteOffset, moov.byteLength);
    // A visual sample entry's fixed part is 78 bytes; width and height are at 24 and 26.
    const width = view.getUint16(entry.payload + 24);
    const height = view.getUint16(entry.payload + 26);
    const avcC = childBox(moov, entry, 'avcC', 78);
    if (!avcC) throw new Mp4FormatError(`${name} has an H.264 sample entry without its avcC`);
    out.push({
      width,
      height,
      avcC: moov.slice(avcC.payload, avcC.end),
      raw: moov.slice(entry.start, entry.end),
    });
  }
  if (out.length === 0) throw new Mp4FormatError(`${name} has a video track without a sample entry`);
  return out;
}

function table(moov: Uint8Array, stbl: BoxView, type: string): Cursor | null {
  const b = childBox(moov, stbl, type);
  return b ? new Cursor(moov, b.payload) : null;
}

function samples(moov: Uint8Array, stbl: BoxView, entryCount: number, name: string): VideoSample[] {
  const missing = (t: string) => new Mp4FormatError(`${name} has no '${t}' in its video track`);

  const stsz = table(moov, stbl, 'stsz');
  if (!stsz) throw missing('stsz');
  stsz.version();
  const fixed = stsz.u32();
  const count = stsz.u32();
  const sizes = Array.from({ length: count }, () => (fixed !== 0 ? fixed : stsz.u32()));

  const durations: number[] = [];
  const stts = table(moov, stbl, 'stts');
  if (!stts) throw missing('stts');
  stts.version();
  for (let n = stts.u32(); n > 0; n--) {
    const run = stts.u32();
    const delta = stts.u32();
    for (let i = 0; i < run; i++) durations.push(delta);
  }

  const offsets: number[] = [];
  const ctts = table(moov, stbl, 'ctts');
  if (ctts) {
    ctts.version();
    for (let n = ctts.u32(); n > 0; n--) {
      const run = ctts.u32();
      // Read as signed in both versions: writers put negative offsets in version 0 too.
      const offset = ctts.i32();
      for (let i = 0; i < run; i++) offsets.push(offset);
    }
  }

  let sync: Set<number> | null = null;
  const stss = table(moov, stbl, 'stss');
  if (stss) {
    stss.version();
    sync = new Set();
    for (let n = stss.u32(); n > 0; n--) sync.add(stss.u32());
  }

  const chunkOffsets: number[] = [];
  const stco = table(moov, stbl, 'stco');
  const co64 = table(moov, stbl, 'co64');
  const chunks = stco ?? co64;
  if (!chunks) throw missing('stco');
  chunks.version();
  for (let n = chunks.u32(); n > 0; n--) chunkOffsets.push(stco ? chunks.u32() : chunks.u64());

  const stsc = table(moov, stbl, 'stsc');
  if (!stsc) throw missing('stsc');
  stsc.version();
  const runs: Array<{ first: number; perChunk: number; entry: number }> = [];
  for (let n = stsc.u32(); n > 0; n--)
    runs.push({ first: stsc.u32(), perChunk: stsc.u32(), entry: stsc.u32() });

  const out: VideoSample[] = [];
  let run = 0;
  for (let chunk = 1; chunk <= chunkOffsets.length && out.length < count; chunk++) {
    while (run + 1 < runs.length && runs[run + 1]!.first <= chunk) run++;
    const r = runs[run];
    if (!r) throw new Mp4FormatError(`${name} has an empty sample-to-chunk table`);
    if (r.entry < 1 || r.entry > entryCount) {
      throw new Mp4FormatError(`${name} points a chunk at sample entry ${r.entry}, which it does not have`);
    }
    let offset = chunkOffsets[chunk - 1]!;
    for (let i = 0; i < r.perChunk && out.length < count; i++) {
      const k = out.length;
      const size = sizes[k]!;
      out.push({
        offset,
        size,
        duration: durations[k] ?? durations[durations.length - 1] ?? 0,
        compositionOffset: offsets[k] ?? 0,
        sync: sync ? sync.has(k + 1) : true,
        entry: r.entry - 1,
      });
      offset += size;
    }
  }
  if (out.length !== count) {
    throw new Mp4FormatError(`${name} lists ${count} samples but its chunks hold ${out.length}`);
  }
  return out;
}

/** The edit list's media time of its first non-empty edit (0 without an edit list). */
function editMediaTime(moov: Uint8Array, trak: BoxView): number {
  const elst = boxAtPath(moov, trak, ['edts', 'elst']);
  if (!elst) return 0;
  const c = new Cursor(moov, elst.payload);
  const v1 = c.version() === 1;
  for (let n = c.u32(); n > 0; n--) {
    if (v1) c.u64();
    else c.u32();
    const mediaTime = v1 ? c.i64() : c.i32();
    c.u32(); // rate
    // An empty edit (media time -1) is a pause before the track starts; joined recordings
    // play back to back, so it is not kept.
    if (mediaTime >= 0) return mediaTime;
  }
  return 0;
}
