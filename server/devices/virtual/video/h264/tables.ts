/**
 * The H.264 tables an encoder needs (ITU-T H.264, 2019 edition): the CAVLC codes of clause
 * 9.2, the coded_block_pattern mapping of Table 9-4, scans, and the constants of the
 * integer transform and quantisation. Codes are written as the standard prints them, bit
 * strings read left to right, so each row can be checked against the printed table.
 */

/** A code word: its value and length in bits. */
export interface Code {
  value: number;
  length: number;
}

function code(bits: string): Code {
  return { value: bits.length === 0 ? 0 : parseInt(bits, 2), length: bits.length };
}

/**
 * Table 9-5, coeff_token: [TrailingOnes, TotalCoeff, 0 <= nC < 2, 2 <= nC < 4, 4 <= nC < 8].
 * For 8 <= nC the code is a 6-bit fixed-length one (coeffTokenCode below).
 */
// prettier-ignore
const COEFF_TOKEN_ROWS: ReadonlyArray<readonly [number, number, string, string, string]> = [
  [0, 0, '1', '11', '1111'],
  [0, 1, '000101', '001011', '001111'],
  [1, 1, '01', '10', '1110'],
  [0, 2, '00000111', '000111', '001011'],
  [1, 2, '000100', '00111', '01111'],
  [2, 2, '001', '011', '1101'],
  [0, 3, '000000111', '0000111', '001000'],
  [1, 3, '00000110', '001010', '01100'],
  [2, 3, '0000101', '001001', '01110'],
  [3, 3, '00011', '0101', '1100'],
  [0, 4, '0000000111', '00000111', '0001111'],
  [1, 4, '000000110', '000110', '01010'],
  [2, 4, '00000101', '000101', '01011'],
  [3, 4, '000011', '0100', '1011'],
  [0, 5, '00000000111', '00000100', '0001011'],
  [1, 5, '0000000110', '0000110', '01000'],
  [2, 5, '000000101', '0000101', '01001'],
  [3, 5, '0000100', '00110', '1010'],
  [0, 6, '0000000001111', '000000111', '0001001'],
  [1, 6, '00000000110', '00000110', '001110'],
  [2, 6, '0000000101', '00000101', '001101'],
  [3, 6, '00000100', '001000', '1001'],
  [0, 7, '0000000001011', '00000001111', '0001000'],
  [1, 7, '0000000001110', '000000110', '001010'],
  [2, 7, '00000000101', '000000101', '001001'],
  [3, 7, '000000100', '000100', '1000'],
  [0, 8, '0000000001000', '00000001011', '00001111'],
  [1, 8, '0000000001010', '00000001110', '0001110'],
  [2, 8, '0000000001101', '00000001101', '0001101'],
  [3, 8, '0000000100', '0000100', '01101'],
  [0, 9, '00000000001111', '000000001111', '00001011'],
  [1, 9, '00000000001110', '00000001010', '00001110'],
  [2, 9, '0000000001001', '00000001001', '0001010'],
  [3, 9, '00000000100', '000000100', '001100'],
  [0, 10, '00000000001011', '000000001011', '000001111'],
  [1, 10, '00000000001010', '000000001110', '00001010'],
  [2, 10, '00000000001101', '000000001101', '00001101'],
  [3, 10, '0000000001100', '00000001100', '0001100'],
  [0, 11, '000000000001111', '000000001000', '000001011'],
  [1, 11, '000000000001110', '000000001010', '000001110'],
  [2, 11, '00000000001001', '000000001001', '00001001'],
  [3, 11, '00000000001100', '00000001000', '00001100'],
  [0, 12, '000000000001011', '0000000001111', '000001000'],
  [1, 12, '000000000001010', '0000000001110', '000001010'],
  [2, 12, '000000000001101', '0000000001101', '000001101'],
  [3, 12, '00000000001000', '000000001100', '00001000'],
  [0, 13, '0000000000001111', '0000000001011', '0000001101'],
  [1, 13, '000000000000001', '0000000001010', '000000111'],
  [2, 13, '000000000001001', '0000000001001', '000001001'],
  [3, 13, '000000000001100', '0000000001100', '000001100'],
  [0, 14, '0000000000001011', '0000000000111', '0000001001'],
  [1, 14, '0000000000001110', '00000000001011', '0000001100'],
  [2, 14, '0000000000001101', '0000000000110', '0000001011'],
  [3, 14, '000000000001000', '0000000001000', '0000001010'],
  [0, 15, '0000000000000111', '00000000001001', '0000000101'],
  [1, 15, '0000000000001010', '00000000001000', '0000001000'],
  [2, 15, '0000000000001001', '00000000001010', '0000000111'],
  [3, 15, '0000000000001100', '0000000000001', '0000000110'],
  [0, 16, '0000000000000100', '00000000000111', '0000000001'],
  [1, 16, '0000000000000110', '00000000000110', '0000000100'],
  [2, 16, '0000000000000101', '00000000000101', '0000000011'],
  [3, 16, '0000000000001000', '00000000000100', '0000000010'],
];

/** Table 9-5, the nC == -1 column (chroma DC of 4:2:0): [TrailingOnes, TotalCoeff, code]. */
// prettier-ignore
const CHROMA_DC_COEFF_TOKEN_ROWS: ReadonlyArray<readonly [number, number, string]> = [
  [0, 0, '01'],
  [0, 1, '000111'],
  [1, 1, '1'],
  [0, 2, '000100'],
  [1, 2, '000110'],
  [2, 2, '001'],
  [0, 3, '000011'],
  [1, 3, '0000011'],
  [2, 3, '0000010'],
  [3, 3, '000101'],
  [0, 4, '000010'],
  [1, 4, '00000011'],
  [2, 4, '00000010'],
  [3, 4, '0000000'],
];

/** Tables 9-7 and 9-8, total_zeros for 4x4 blocks: row TotalCoeff - 1, column total_zeros. */
// prettier-ignore
const TOTAL_ZEROS_ROWS: ReadonlyArray<readonly string[]> = [
  ['1', '011', '010', '0011', '0010', '00011', '00010', '000011', '000010', '0000011', '0000010', '00000011', '00000010', '000000011', '000000010', '000000001'],
  ['111', '110', '101', '100', '011', '0101', '0100', '0011', '0010', '00011', '00010', '000011', '000010', '000001', '000000'],
  ['0101', '111', '110', '101', '0100', '0011', '100', '011', '0010', '00011', '00010', '000001', '00001', '000000'],
  ['00011', '111', '0101', '0100', '110', '101', '100', '0011', '011', '0010', '00010', '00001', '00000'],
  ['0101', '0100', '0011', '111', '110', '101', '100', '011', '0010', '00001', '0001', '00000'],
  ['000001', '00001', '111', '110', '101', '100', '011', '010', '0001', '001', '000000'],
  ['000001', '00001', '101', '100', '011', '11', '010', '0001', '001', '000000'],
  ['000001', '0001', '00001', '011', '11', '10', '010', '001', '000000'],
  ['000001', '000000', '0001', '11', '10', '001', '01', '00001'],
  ['00001', '00000', '001', '11', '10', '01', '0001'],
  ['0000', '0001', '001', '010', '1', '011'],
  ['0000', '0001', '01', '1', '001'],
  ['000', '001', '1', '01'],
  ['00', '01', '1'],
  ['0', '1'],
];

/** Table 9-9 (a), total_zeros for chroma DC 2x2 blocks: row TotalCoeff - 1, column total_zeros. */
// prettier-ignore
const CHROMA_DC_TOTAL_ZEROS_ROWS: ReadonlyArray<readonly string[]> = [
  ['1', '01', '001', '000'],
  ['1', '01', '00'],
  ['1', '0'],
];

/** Table 9-10, run_before: row min(zerosLeft, 7) - 1, column run_before. */
// prettier-ignore
const RUN_BEFORE_ROWS: ReadonlyArray<readonly string[]> = [
  ['1', '0'],
  ['1', '01', '00'],
  ['11', '10', '01', '00'],
  ['11', '10', '01', '001', '000'],
  ['11', '10', '011', '010', '001', '000'],
  ['11', '000', '001', '011', '010', '101', '100'],
  ['111', '110', '101', '100', '011', '010', '001', '0001', '00001', '000001', '0000001', '00000001', '000000001', '0000000001', '00000000001'],
];

/** coeff_token codes for the three variable-length columns: [table][TotalCoeff * 4 + TrailingOnes]. */
const COEFF_TOKEN: readonly Code[][] = [0, 1, 2].map((column) => {
  const out: Code[] = [];
  for (const row of COEFF_TOKEN_ROWS) out[row[1] * 4 + row[0]] = code(row[2 + column] as string);
  return out;
});

const CHROMA_DC_COEFF_TOKEN: readonly Code[] = (() => {
  const out: Code[] = [];
  for (const [t1, tc, bits] of CHROMA_DC_COEFF_TOKEN_ROWS) out[tc * 4 + t1] = code(bits);
  return out;
})();

/** The coeff_token code for a block whose neighbours predict nC (-1 for chroma DC). */
export function coeffTokenCode(nC: number, totalCoeff: number, trailingOnes: number): Code {
  if (nC === -1) return CHROMA_DC_COEFF_TOKEN[totalCoeff * 4 + trailingOnes]!;
  if (nC >= 8) {
    // 6 bits: TotalCoeff - 1 in four, TrailingOnes in two; "no coefficients" is 000011.
    return totalCoeff === 0
      ? { value: 3, length: 6 }
      : { value: ((totalCoeff - 1) << 2) | trailingOnes, length: 6 };
  }
  return COEFF_TOKEN[nC < 2 ? 0 : nC < 4 ? 1 : 2]![totalCoeff * 4 + trailingOnes]!;
}

export const TOTAL_ZEROS: readonly (readonly Code[])[] = TOTAL_ZEROS_ROWS.map((row) => row.map(code));
export const CHROMA_DC_TOTAL_ZEROS: readonly (readonly Code[])[] = CHROMA_DC_TOTAL_ZEROS_ROWS.map((row) =>
  row.map(code),
);
export const RUN_BEFORE: readonly (readonly Code[])[] = RUN_BEFORE_ROWS.map((row) => row.map(code));

/** For tests: every code table as bit strings, to check that each is prefix-free. */
export const CAVLC_TABLES_FOR_TESTS = {
  coeffToken: [0, 1, 2].map((column) => COEFF_TOKEN_ROWS.map((row) => row[2 + column] as string)),
  chromaDcCoeffToken: CHROMA_DC_COEFF_TOKEN_ROWS.map((row) => row[2]),
  totalZeros: TOTAL_ZEROS_ROWS,
  chromaDcTotalZeros: CHROMA_DC_TOTAL_ZEROS_ROWS,
  runBefore: RUN_BEFORE_ROWS,
};

/**
 * Table 9-4 (chroma_format_idc 1): coded_block_pattern by codeNum, for Intra_4x4 and for
 * Inter macroblocks. The encoder needs the inverse: the codeNum of a pattern.
 */
// prettier-ignore
const CBP_BY_CODE_NUM_INTRA = [
  47, 31, 15, 0, 23, 27, 29, 30, 7, 11, 13, 14, 39, 43, 45, 46,
  16, 3, 5, 10, 12, 19, 21, 26, 28, 35, 37, 42, 44, 1, 2, 4,
  8, 17, 18, 20, 24, 6, 9, 22, 25, 32, 33, 34, 36, 40, 38, 41,
];
// prettier-ignore
const CBP_BY_CODE_NUM_INTER = [
  0, 16, 1, 2, 4, 8, 32, 3, 5, 10, 12, 15, 47, 7, 11, 13,
  14, 6, 9, 31, 35, 37, 42, 44, 33, 34, 36, 40, 39, 43, 45, 46,
  17, 18, 20, 24, 19, 21, 26, 28, 23, 27, 29, 30, 22, 25, 38, 41,
];

function inverse(byCodeNum: readonly number[]): Uint8Array {
  const out = new Uint8Array(48);
  byCodeNum.forEach((cbp, codeNum) => (out[cbp] = codeNum));
  return out;
}

/** codeNum of a coded_block_pattern (cbpLuma | cbpChroma << 4) for Intra_4x4 macroblocks. */
export const CBP_CODE_NUM_INTRA = inverse(CBP_BY_CODE_NUM_INTRA);
/** codeNum of a coded_block_pattern for Inter macroblocks. */
export const CBP_CODE_NUM_INTER = inverse(CBP_BY_CODE_NUM_INTER);

/** Zig-zag scan of a 4x4 block (frame macroblocks): scan position -> raster index (y * 4 + x). */
export const ZIGZAG = Uint8Array.of(0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15);

/**
 * Position class of a raster index in a 4x4 block for quantisation: 0 when x and y are both
 * even, 1 when both odd, 2 otherwise (the three scale factors of the integer transform).
 */
export const POSITION_CLASS = Uint8Array.from({ length: 16 }, (_, i) => {
  const x = i & 3;
  const y = i >> 2;
  return x % 2 === 0 && y % 2 === 0 ? 0 : x % 2 === 1 && y % 2 === 1 ? 1 : 2;
});

/** normAdjust4x4 (8.5.9): the decoder's scale per QP % 6 and position class. */
// prettier-ignore
export const DEQUANT_SCALE: readonly (readonly [number, number, number])[] = [
  [10, 16, 13], [11, 18, 14], [13, 20, 16], [14, 23, 18], [16, 25, 20], [18, 29, 23],
];

/**
 * The encoder's quantisation multipliers: 2^15 divided by the decoder's scale and the
 * transform's norm, per QP % 6 and position class (the values every H.264 encoder uses).
 */
// prettier-ignore
export const QUANT_SCALE: readonly (readonly [number, number, number])[] = [
  [13107, 5243, 8066], [11916, 4660, 7490], [10082, 4194, 6554],
  [9362, 3647, 5825], [8192, 3355, 5243], [7282, 2893, 4559],
];

/** Table 8-15: QPc for qPI (chroma_qp_index_offset 0, so qPI is the luma QP). */
// prettier-ignore
export const CHROMA_QP = Uint8Array.of(
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
  29, 30, 31, 32, 32, 33, 34, 34, 35, 35, 36, 36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39,
);

/**
 * Table A-1: per level, the macroblocks per second and per frame, the decoded picture
 * buffer's size in macroblocks, and the Baseline profile's bit rate (kbit/s) a decoder of
 * that level handles.
 */
// prettier-ignore
export const LEVELS: ReadonlyArray<{ idc: number; mbPerSecond: number; frameMbs: number; dpbMbs: number; kbps: number }> = [
  { idc: 10, mbPerSecond: 1485, frameMbs: 99, dpbMbs: 396, kbps: 64 },
  { idc: 11, mbPerSecond: 3000, frameMbs: 396, dpbMbs: 900, kbps: 192 },
  { idc: 12, mbPerSecond: 6000, frameMbs: 396, dpbMbs: 2376, kbps: 384 },
  { idc: 13, mbPerSecond: 11880, frameMbs: 396, dpbMbs: 2376, kbps: 768 },
  { idc: 20, mbPerSecond: 11880, frameMbs: 396, dpbMbs: 2376, kbps: 2000 },
  { idc: 21, mbPerSecond: 19800, frameMbs: 792, dpbMbs: 4752, kbps: 4000 },
  { idc: 22, mbPerSecond: 20250, frameMbs: 1620, dpbMbs: 8100, kbps: 4000 },
  { idc: 30, mbPerSecond: 40500, frameMbs: 1620, dpbMbs: 8100, kbps: 10000 },
  { idc: 31, mbPerSecond: 108000, frameMbs: 3600, dpbMbs: 18000, kbps: 14000 },
  { idc: 32, mbPerSecond: 216000, frameMbs: 5120, dpbMbs: 20480, kbps: 20000 },
  { idc: 40, mbPerSecond: 245760, frameMbs: 8192, dpbMbs: 32768, kbps: 20000 },
  { idc: 41, mbPerSecond: 245760, frameMbs: 8192, dpbMbs: 32768, kbps: 50000 },
  { idc: 42, mbPerSecond: 522240, frameMbs: 8704, dpbMbs: 34816, kbps: 50000 },
  { idc: 50, mbPerSecond: 589824, frameMbs: 22080, dpbMbs: 110400, kbps: 135000 },
  { idc: 51, mbPerSecond: 983040, frameMbs: 36864, dpbMbs: 184320, kbps: 240000 },
  { idc: 52, mbPerSecond: 2073600, frameMbs: 36864, dpbMbs: 184320, kbps: 240000 },
];
