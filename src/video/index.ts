/**
 * MP4 files with one H.264 video track: a streaming writer (samples first, index last, as
 * Android's MediaMuxer writes `screenrecord`'s files), a reader of the index, and joining
 * recordings made one after another into one file.
 */
export { Mp4FormatError } from './box.js';
export { FileSink, FileSource, MemorySink, bufferSource, type ByteSink, type ByteSource } from './io.js';
export { joinMp4 } from './mp4-join.js';
export { readMp4, type Mp4File } from './mp4-read.js';
export {
  Mp4Writer,
  VIDEO_TIMESCALE,
  type EncodedFrame,
  type Mp4Summary,
  type Mp4WriterOptions,
} from './mp4-write.js';
export type { AvcSampleEntry, ColourDescription, VideoSample, VideoTrack } from './track.js';
