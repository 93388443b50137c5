/**
 * The sequence and picture parameter sets (7.3.2.1, 7.3.2.2) of the encoder's streams:
 * Constrained Baseline profile, 4:2:0, progressive frames, a few reference frames, picture
 * order from frame numbers (no reordering), CAVLC, and the deblocking filter switchable
 * from the slice header (the encoder switches it off).
 */
import type { ColourDescription } from '../../../../../src/video/track.js';
import { BitWriter, nalUnit } from './bit-writer.js';
import { LEVELS } from './tables.js';

export const PROFILE_BASELINE = 66;
/** Frame numbers wrap at 2^16; they only need to tell successive references apart. */
export const LOG2_MAX_FRAME_NUM = 16;

/**
 * BT.601 in limited (video) range, as Android's encoders tag a screen recording:
 * SMPTE 170M primaries, transfer and matrix (code points 6).
 */
export const BT601_LIMITED: ColourDescription = { primaries: 6, transfer: 6, matrix: 6, fullRange: false };

export interface StreamShape {
  width: number;
  height: number;
  /** The most frames per second the stream carries (for the level). */
  maxFps: number;
  bitRate: number;
  /** The reference frames its decoder is to hold (the decoded picture buffer); 1 by default. */
  references?: number;
}

/**
 * The lowest level (Table A-1) whose decoders handle this picture size, frame rate and bit
 * rate and hold `references` frames; when no level holds that many at this size, the
 * lowest that handles the rest (maxReferenceFrames says how many it holds).
 */
export function levelFor(shape: StreamShape): number {
  const mbW = Math.ceil(shape.width / 16);
  const mbH = Math.ceil(shape.height / 16);
  const frameMbs = mbW * mbH;
  const fits = (level: (typeof LEVELS)[number], references: number) => {
    // A.3.1: neither side may exceed sqrt(8 * MaxFS) macroblocks.
    const side = Math.sqrt(8 * level.frameMbs);
    return (
      frameMbs <= level.frameMbs &&
      mbW <= side &&
      mbH <= side &&
      frameMbs * shape.maxFps <= level.mbPerSecond &&
      shape.bitRate <= level.kbps * 1000 &&
      framesHeld(level, frameMbs) >= references
    );
  };
  const references = Math.min(16, shape.references ?? 1);
  const level = LEVELS.find((l) => fits(l, references)) ?? LEVELS.find((l) => fits(l, 1)) ?? LEVELS.at(-1)!;
  return level.idc;
}

/**
 * The most reference frames a stream of this size may keep at this level (A.3.1 h: the
 * decoded picture buffer's macroblocks over a frame's, at most 16).
 */
export function maxReferenceFrames(level: number, width: number, height: number): number {
  const frameMbs = Math.ceil(width / 16) * Math.ceil(height / 16);
  return Math.max(1, framesHeld(LEVELS.find((l) => l.idc === level) ?? LEVELS.at(-1)!, frameMbs));
}

/** How many frames of `frameMbs` macroblocks a level's decoded picture buffer holds (16 at most). */
function framesHeld(level: (typeof LEVELS)[number], frameMbs: number): number {
  return Math.min(16, Math.floor(level.dpbMbs / frameMbs));
}

export interface SpsOptions {
  width: number;
  height: number;
  level: number;
  colour: ColourDescription;
  /** max_num_ref_frames: how many earlier pictures P pictures refer to; 1 by default. */
  references?: number;
}

/** seq_parameter_set_rbsp() as a NAL unit (type 7, nal_ref_idc 3). */
export function sequenceParameterSet(o: SpsOptions): Uint8Array {
  const mbW = Math.ceil(o.width / 16);
  const mbH = Math.ceil(o.height / 16);
  const w = new BitWriter(64);
  w.u(8, PROFILE_BASELINE);
  // constraint_set0_flag and constraint_set1_flag: Constrained Baseline (A.2.1.1), which
  // every H.264 decoder, hardware or software, plays.
  w.u(8, 0b1100_0000);
  w.u(8, o.level);
  w.ue(0); // seq_parameter_set_id
  w.ue(LOG2_MAX_FRAME_NUM - 4);
  w.ue(2); // pic_order_cnt_type 2: output order is decoding order
  const references = o.references ?? 1;
  w.ue(references); // max_num_ref_frames
  w.flag(false); // gaps_in_frame_num_value_allowed_flag
  w.ue(mbW - 1);
  w.ue(mbH - 1);
  w.flag(true); // frame_mbs_only_flag
  w.flag(true); // direct_8x8_inference_flag
  const cropRight = mbW * 16 - o.width;
  const cropBottom = mbH * 16 - o.height;
  w.flag(cropRight > 0 || cropBottom > 0);
  if (cropRight > 0 || cropBottom > 0) {
    // In 4:2:0 crop offsets count pairs of luma samples.
    w.ue(0);
    w.ue(cropRight / 2);
    w.ue(0);
    w.ue(cropBottom / 2);
  }
  w.flag(true); // vui_parameters_present_flag
  vui(w, o.colour, references);
  w.trailingBits();
  return nalUnit(0x67, w.bytes());
}

/** vui_parameters() (E.1.1): colour description and "no reordering, only the references buffered". */
function vui(w: BitWriter, colour: ColourDescription, references: number): void {
  w.flag(true); // aspect_ratio_info_present_flag
  w.u(8, 1); // aspect_ratio_idc 1: square pixels
  w.flag(false); // overscan_info_present_flag
  w.flag(true); // video_signal_type_present_flag
  w.u(3, 5); // video_format: unspecified
  w.flag(colour.fullRange);
  w.flag(true); // colour_description_present_flag
  w.u(8, colour.primaries);
  w.u(8, colour.transfer);
  w.u(8, colour.matrix);
  w.flag(false); // chroma_loc_info_present_flag
  // No timing: frames come when the screen changes, their times are the container's.
  w.flag(false); // timing_info_present_flag
  w.flag(false); // nal_hrd_parameters_present_flag
  w.flag(false); // vcl_hrd_parameters_present_flag
  w.flag(false); // pic_struct_present_flag
  // Decoders that see no bitstream restriction may hold frames back in case of reordering.
  w.flag(true); // bitstream_restriction_flag
  w.flag(true); // motion_vectors_over_pic_boundaries_flag
  w.ue(0); // max_bytes_per_pic_denom: no limit
  w.ue(0); // max_bits_per_mb_denom: no limit
  w.ue(15); // log2_max_mv_length_horizontal
  w.ue(15); // log2_max_mv_length_vertical
  w.ue(0); // max_num_reorder_frames
  w.ue(references); // max_dec_frame_buffering: at least max_num_ref_frames
}

/** pic_parameter_set_rbsp() as a NAL unit (type 8, nal_ref_idc 3). */
export function pictureParameterSet(): Uint8Array {
  const w = new BitWriter(16);
  w.ue(0); // pic_parameter_set_id
  w.ue(0); // seq_parameter_set_id
  w.flag(false); // entropy_coding_mode_flag: CAVLC
  w.flag(false); // bottom_field_pic_order_in_frame_present_flag
  w.ue(0); // num_slice_groups_minus1
  w.ue(0); // num_ref_idx_l0_default_active_minus1
  w.ue(0); // num_ref_idx_l1_default_active_minus1
  w.flag(false); // weighted_pred_flag
  w.u(2, 0); // weighted_bipred_idc
  w.se(0); // pic_init_qp_minus26: slices say their QP
  w.se(0); // pic_init_qs_minus26
  w.se(0); // chroma_qp_index_offset
  // deblocking_filter_control_present_flag: lets slices switch the filter off, so the
  // encoder's reconstruction is exactly the decoder's picture.
  w.flag(true);
  w.flag(false); // constrained_intra_pred_flag
  w.flag(false); // redundant_pic_cnt_present_flag
  w.trailingBits();
  return nalUnit(0x68, w.bytes());
}
