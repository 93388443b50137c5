/**
 * residual_block_cavlc() (7.3.5.3.2, 9.2): one block of coefficient levels in scan order,
 * coded as coeff_token, trailing-one signs, levels, total_zeros and run_before.
 */
import type { BitWriter } from './bit-writer.js';
import { CHROMA_DC_TOTAL_ZEROS, RUN_BEFORE, TOTAL_ZEROS, coeffTokenCode } from './tables.js';

/** Writes residual blocks; holds the scratch space one block needs. */
export class ResidualWriter {
  /** Non-zero levels from the highest frequency down, and the zeros run before each. */
  private readonly values = new Int32Array(16);
  private readonly runs = new Int32Array(16);

  /**
   * Writes `count` levels read from levels[at + scan[i]] for i < count, with nC predicted
   * from the neighbouring blocks (-1 for chroma DC). Returns TotalCoeff, which the
   * neighbours of later blocks need.
   */
  write(
    w: BitWriter,
    levels: Int32Array,
    at: number,
    scan: ArrayLike<number>,
    count: number,
    nC: number,
  ): number {
    const values = this.values;
    const runs = this.runs;
    let last = -1;
    for (let i = count - 1; i >= 0; i--) {
      if (levels[at + scan[i]!] !== 0) {
        last = i;
        break;
      }
    }
    // total_zeros counts every zero below the highest level; the lowest level's run is
    // what is left of them and is not written.
    let totalCoeff = 0;
    let totalZeros = 0;
    for (let i = last; i >= 0; i--) {
      const v = levels[at + scan[i]!]!;
      if (v !== 0) {
        values[totalCoeff] = v;
        runs[totalCoeff] = 0;
        totalCoeff++;
      } else {
        runs[totalCoeff - 1]!++;
        totalZeros++;
      }
    }

    let trailingOnes = 0;
    while (
      trailingOnes < 3 &&
      trailingOnes < totalCoeff &&
      (values[trailingOnes] === 1 || values[trailingOnes] === -1)
    ) {
      trailingOnes++;
    }

    w.code(coeffTokenCode(nC, totalCoeff, trailingOnes));
    if (totalCoeff === 0) return 0;

    for (let i = 0; i < trailingOnes; i++) w.u(1, values[i]! < 0 ? 1 : 0);

    let suffixLength = totalCoeff > 10 && trailingOnes < 3 ? 1 : 0;
    for (let i = trailingOnes; i < totalCoeff; i++) {
      const level = values[i]!;
      let levelCode = level > 0 ? 2 * level - 2 : -2 * level - 1;
      // With fewer than three trailing ones, the first other level cannot be +-1: the code
      // space of +-1 is reused.
      if (i === trailingOnes && trailingOnes < 3) levelCode -= 2;
      writeLevel(w, levelCode, suffixLength);
      if (suffixLength === 0) suffixLength = 1;
      if ((level < 0 ? -level : level) > 3 << (suffixLength - 1) && suffixLength < 6) suffixLength++;
    }

    if (totalCoeff < count) {
      const table = count === 4 ? CHROMA_DC_TOTAL_ZEROS : TOTAL_ZEROS;
      w.code(table[totalCoeff - 1]![totalZeros]!);
    }

    let zerosLeft = totalZeros;
    for (let i = 0; i < totalCoeff - 1 && zerosLeft > 0; i++) {
      const run = runs[i]!;
      w.code(RUN_BEFORE[(zerosLeft < 7 ? zerosLeft : 7) - 1]![run]!);
      zerosLeft -= run;
    }
    return totalCoeff;
  }
}

/** level_prefix and level_suffix for a levelCode (9.2.2.1), without escapes past prefix 15. */
function writeLevel(w: BitWriter, levelCode: number, suffixLength: number): void {
  let prefix: number;
  let suffix = 0;
  let suffixBits: number;
  if (suffixLength === 0) {
    if (levelCode < 14) {
      prefix = levelCode;
      suffixBits = 0;
    } else if (levelCode < 30) {
      prefix = 14;
      suffix = levelCode - 14;
      suffixBits = 4;
    } else {
      prefix = 15;
      suffix = levelCode - 30;
      suffixBits = 12;
    }
  } else if (levelCode < 15 << suffixLength) {
    prefix = levelCode >> suffixLength;
    suffix = levelCode & ((1 << suffixLength) - 1);
    suffixBits = suffixLength;
  } else {
    prefix = 15;
    suffix = levelCode - (15 << suffixLength);
    suffixBits = 12;
  }
  if (suffix >= 1 << 12)
    throw new RangeError(`level code ${levelCode} needs an escape Baseline streams may not use`);
  w.u(prefix + 1, 1);
  if (suffixBits > 0) w.u(suffixBits, suffix);
}
