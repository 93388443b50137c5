/**
 * One H.264 video track as an MP4 describes it: sample entries (the decoder configurations,
 * 'avc1' boxes with their avcC), and per sample where its bytes are, how long it lasts,
 * whether a decoder can start there and which sample entry decodes it. The reader produces
 * this, the writer serialises it; joining recordings is rewriting it.
 */
import { Fields, box } from './box.js';

/** An H.264 sample entry ('avc1' or 'avc3'): the decoder configuration of some samples. */
export interface AvcSampleEntry {
  width: number;
  height: number;
  /** The AVCDecoderConfigurationRecord (the avcC box's payload): SPS and PPS. */
  avcC: Uint8Array;
  /**
   * The whole sample entry box as a file had it (with colr, pasp, btrt...); written back
   * unchanged when present, so joining never loses what a phone's muxer said.
   */
  raw?: Uint8Array;
  /** Colour description written as an 'nclx' colr box when `raw` is absent. */
  colour?: ColourDescription;
}

/** ISO/IEC 23091-2 code points, as H.264's VUI and MP4's colr box both carry them. */
export interface ColourDescription {
  primaries: number;
  transfer: number;
  matrix: number;
  fullRange: boolean;
}

export interface VideoSample {
  /** Where the sample's bytes are in its file. */
  offset: number;
  size: number;
  /** In the track's timescale. */
  duration: number;
  /** Presentation time minus decoding time, in the track's timescale (B-frames only). */
  compositionOffset: number;
  /** A decoder can start here (an IDR picture). */
  sync: boolean;
  /** Index into the track's entries. */
  entry: number;
}

export interface VideoTrack {
  /** Ticks per second of the sample durations. */
  timescale: number;
  /** Display size (the first sample entry's, unless the track header says otherwise). */
  width: number;
  height: number;
  entries: AvcSampleEntry[];
  samples: VideoSample[];
  /**
   * Where presentation starts in media time (the edit list's media_time), in the track's
   * timescale; non-zero when B-frames delay the first picture.
   */
  mediaTime: number;
}

/** NAL unit types this library looks at (H.264 Table 7-1). */
export const NAL = { SLICE: 1, IDR: 5, SEI: 6, SPS: 7, PPS: 8, AUD: 9 } as const;

export function nalType(nal: Uint8Array): number {
  return (nal[0] ?? 0) & 0x1f;
}

/** NAL units as an MP4 sample written here holds them: each preceded by its length in 4 bytes. */
export function toLengthPrefixed(nals: readonly Uint8Array[]): Uint8Array {
  return lengthPrefixed(nals, 4);
}

/**
 * The AVCDecoderConfigurationRecord for one SPS and PPS set (ISO/IEC 14496-15 5.3.3.1).
 * Profile, compatibility flags and level are copied from the first SPS, as the format asks.
 */
export function avcDecoderConfiguration(sps: readonly Uint8Array[], pps: readonly Uint8Array[]): Uint8Array {
  const first = sps[0];
  if (!first || first.length < 4) throw new Error('an H.264 decoder configuration needs an SPS');
  if (pps.length === 0) throw new Error('an H.264 decoder configuration needs a PPS');
  const f = new Fields()
    .u8(1)
    .u8(first[1]!)
    .u8(first[2]!)
    .u8(first[3]!)
    // Six reserved bits, then lengthSizeMinusOne = 3: every NAL unit length takes 4 bytes.
    .u8(0xfc | 3)
    .u8(0xe0 | sps.length);
  for (const s of sps) f.u16(s.length).bytes(s);
  f.u8(pps.length);
  for (const p of pps) f.u16(p.length).bytes(p);
  return f.toBytes();
}

/** What an AVCDecoderConfigurationRecord holds: the NAL length size and the parameter sets. */
export interface AvcConfiguration {
  /** Bytes of each NAL unit's length in the samples: 1, 2 or 4. */
  lengthSize: number;
  sps: Uint8Array[];
  pps: Uint8Array[];
}

export function parseAvcDecoderConfiguration(avcC: Uint8Array): AvcConfiguration {
  const sets = (count: number, at: number): [Uint8Array[], number] => {
    const out: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      const len = ((avcC[at] ?? 0) << 8) | (avcC[at + 1] ?? 0);
      if (at + 2 + len > avcC.length) throw new RangeError('the avcC is cut off inside a parameter set');
      out.push(avcC.subarray(at + 2, at + 2 + len));
      at += 2 + len;
    }
    return [out, at];
  };
  if (avcC.length < 7 || avcC[0] !== 1) throw new RangeError('not an AVCDecoderConfigurationRecord');
  const [sps, afterSps] = sets(avcC[5]! & 0x1f, 6);
  const [pps] = sets(avcC[afterSps] ?? 0, afterSps + 1);
  return { lengthSize: (avcC[4]! & 3) + 1, sps, pps };
}

/** NAL units preceded by their lengths in `lengthSize` bytes. */
export function lengthPrefixed(nals: readonly Uint8Array[], lengthSize: number): Uint8Array {
  const out = new Uint8Array(nals.reduce((n, nal) => n + lengthSize + nal.length, 0));
  let at = 0;
  for (const nal of nals) {
    for (let i = lengthSize - 1, len = nal.length; i >= 0; i--, len = Math.floor(len / 256))
      out[at + i] = len & 0xff;
    out.set(nal, at + lengthSize);
    at += lengthSize + nal.length;
  }
  return out;
}

/** The 'avc1' sample entry box for an entry (its raw box when it came from a file). */
export function sampleEntryBox(entry: AvcSampleEntry): Uint8Array {
  if (entry.raw) return entry.raw;
  const compressor = new Uint8Array(32);
  const children = [box('avcC', entry.avcC)];
  if (entry.colour) {
    const c = entry.colour;
    children.push(
      box(
        'colr',
        new Fields()
          .fourcc('nclx')
          .u16(c.primaries)
          .u16(c.transfer)
          .u16(c.matrix)
          .u8(c.fullRange ? 0x80 : 0)
          .toBytes(),
      ),
    );
  }
  return box(
    'avc1',
    new Fields()
      .zeros(6)
      .u16(1) // data_reference_index: the file itself (dref entry 1)
      .zeros(16)
      .u16(entry.width)
      .u16(entry.height)
      .u32(0x00480000) // 72 dpi, as the format's defaults say
      .u32(0x00480000)
      .u32(0)
      .u16(1) // one frame per sample
      .bytes(compressor)
      .u16(0x0018) // depth: colour, no alpha
      .i16(-1)
      .toBytes(),
    ...children,
  );
}

/** Whether two byte strings are equal (decoder configurations are compared this way). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
