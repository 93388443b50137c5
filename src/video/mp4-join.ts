/**
 * Joining recordings into one MP4. `screenrecord` stops at its time limit (3 minutes by
 * default), so a longer recording is several files made one after another on the same
 * phone; played back to back they are the whole recording, and joined they are one video a
 * report can show.
 *
 * Samples are copied as they are, never re-encoded: each piece starts with an IDR picture,
 * so a decoder can continue from one piece into the next. Decode times run on from piece to
 * piece. Pieces whose decoder configurations (SPS/PPS) differ keep one sample entry each, and
 * every sample points at its own, so a player switches configuration where the piece changes.
 */
import { FileSink, FileSource, type ByteSink, type ByteSource } from './io.js';
import { readMp4 } from './mp4-read.js';
import {
  VIDEO_TIMESCALE,
  ftypBox,
  moovBox,
  openMdatHeader,
  patchMdatSize,
  type Mp4Summary,
} from './mp4-write.js';
import {
  lengthPrefixed,
  parseAvcDecoderConfiguration,
  sameBytes,
  type AvcSampleEntry,
  type VideoSample,
  type VideoTrack,
} from './track.js';
import { resolve } from 'node:path';

/** How much of a piece is copied at once. */
const COPY_BYTES = 4 * 1024 * 1024;

interface Mp4Piece {
  source: ByteSource;
  /** How errors refer to this piece (its path). */
  name: string;
}

/**
 * Joins the MP4 files `pieces` (in recording order) into the new file `output`. Every piece
 * must be a finished MP4 with an H.264 video track; a piece that is not is named in the error
 * and nothing is written.
 */
export async function joinMp4(pieces: readonly string[], output: string): Promise<Mp4Summary> {
  const out = resolve(output);
  if (pieces.some((p) => resolve(p) === out)) {
    throw new Error(
      `cannot join into ${output}: it is one of the pieces; write the joined video to a new file`,
    );
  }
  const sources: FileSource[] = [];
  try {
    for (const p of pieces) sources.push(await FileSource.open(p));
    const read = await readPieces(sources.map((source, i) => ({ source, name: pieces[i]! })));
    const sink = await FileSink.create(output);
    try {
      return await writeJoined(read, sink);
    } finally {
      await sink.close();
    }
  } finally {
    await Promise.all(sources.map((s) => s.close()));
  }
}

interface ReadPiece extends Mp4Piece {
  track: VideoTrack;
}

async function readPieces(pieces: readonly Mp4Piece[]): Promise<ReadPiece[]> {
  if (pieces.length === 0) throw new Error('joining needs at least one recording');
  const out: ReadPiece[] = [];
  for (const p of pieces) {
    const { track } = await readMp4(p.source, p.name);
    if (track.samples.length === 0) continue;
    if (!track.samples[0]!.sync) {
      throw new Error(
        `${p.name} does not start with a picture a decoder can start from, so it cannot be joined`,
      );
    }
    out.push({ ...p, track });
  }
  if (out.length === 0) throw new Error('none of the recordings holds a single frame');
  return out;
}

function rescale(value: number, from: number, to: number): number {
  return from === to ? value : Math.round((value * to) / from);
}

async function writeJoined(pieces: readonly ReadPiece[], sink: ByteSink): Promise<Mp4Summary> {
  const first = pieces[0]!.track;
  const timescale = pieces.every((p) => p.track.timescale === first.timescale)
    ? first.timescale
    : VIDEO_TIMESCALE;
  // A piece delayed by B-frames starts presenting at its media time; the joined track starts
  // at the largest, and each piece's composition offsets move up by the difference.
  const mediaTime = Math.max(...pieces.map((p) => rescale(p.track.mediaTime, p.track.timescale, timescale)));

  const entries: AvcSampleEntry[] = [];
  const entryIndex = (entry: AvcSampleEntry): number => {
    const found = entries.findIndex((e) => sameBytes(e.avcC, entry.avcC));
    if (found >= 0) return found;
    entries.push(entry);
    return entries.length - 1;
  };

  const ftyp = ftypBox();
  await sink.append(ftyp);
  await sink.append(openMdatHeader());
  let position = ftyp.length + 16;

  const samples: VideoSample[] = [];
  for (const piece of pieces) {
    const track = piece.track;
    const entryMap = track.entries.map(entryIndex);
    // Where the decoder configuration changes, the first sample also carries the new SPS
    // and PPS in-band: tools that read the stream past the sample entries (ffmpeg's parser,
    // players that keep the first configuration) then decode it too.
    const first = entryMap[track.samples[0]!.entry]!;
    const previous = samples[samples.length - 1];
    let prefix: Uint8Array | null = null;
    if (previous && previous.entry !== first) {
      const config = parseAvcDecoderConfiguration(entries[first]!.avcC);
      prefix = lengthPrefixed([...config.sps, ...config.pps], config.lengthSize);
    }
    const shift = mediaTime - rescale(track.mediaTime, track.timescale, timescale);
    // Durations are rescaled from the piece's running time, so rounding never accumulates.
    let local = 0;
    let previousEnd = 0;
    for (const s of track.samples) {
      local += s.duration;
      const end = rescale(local, track.timescale, timescale);
      samples.push({
        offset: position, // placed by copySamples
        size: s.size,
        duration: end - previousEnd,
        compositionOffset: rescale(s.compositionOffset, track.timescale, timescale) + shift,
        sync: s.sync,
        entry: entryMap[s.entry]!,
      });
      previousEnd = end;
    }
    position += await copySamples(piece, sink, samples.slice(samples.length - track.samples.length), prefix);
  }

  const moov = moovBox({ timescale, width: first.width, height: first.height, entries, samples, mediaTime });
  await sink.append(moov);
  await patchMdatSize(sink, ftyp.length, position - ftyp.length);
  const total = samples.reduce((t, s) => t + s.duration, 0);
  return {
    bytes: position + moov.length,
    frames: samples.length,
    durationUs: Math.round((total * 1_000_000) / timescale),
  };
}

/**
 * Copies a piece's samples to the sink in decode order, back to back from where `placed[0]`
 * says the piece starts, sets each placed sample's new offset (and the first one's size, when
 * `prefix` goes before it), and returns the bytes written. Other tracks' data interleaved
 * between the video samples (phones add metadata tracks) is left behind.
 */
async function copySamples(
  piece: ReadPiece,
  sink: ByteSink,
  placed: VideoSample[],
  prefix: Uint8Array | null,
): Promise<number> {
  const src = piece.track.samples;
  let at = placed[0]!.offset;
  if (prefix) {
    await sink.append(prefix);
    placed[0]!.size += prefix.length;
  }
  let written = prefix?.length ?? 0;
  let i = 0;
  while (i < src.length) {
    // A run of samples lying back to back in the piece is copied in one go.
    const start = src[i]!.offset;
    let end = start + src[i]!.size;
    let j = i + 1;
    while (j < src.length && src[j]!.offset === end && end - start < COPY_BYTES) end += src[j++]!.size;
    const bytes = await piece.source.read(start, end - start);
    if (bytes.length !== end - start) throw new Error(`${piece.name} is cut off inside its video data`);
    await sink.append(bytes);
    written += bytes.length;
    // Samples keep their order, so their new offsets follow one another.
    for (let k = i; k < j; k++) {
      placed[k]!.offset = at;
      at += placed[k]!.size;
    }
    i = j;
  }
  return written;
}
