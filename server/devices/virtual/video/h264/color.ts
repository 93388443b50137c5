/**
 * RGB to Y'CbCr as BT.601 in limited range (Y' 16-235, Cb/Cr 16-240), the colours Android's
 * encoders tag a screen recording with. Integer forms of the BT.601 matrix scaled by 256;
 * chroma is sampled at the average of each 2x2 block of pixels (4:2:0).
 */

/**
 * `rgba` as 32-bit words (a pixel each) when its bytes start at a multiple of 4, else null:
 * what rgbaMacroblockToYuv and the encoder's search for changes compare pixels by.
 */
export function pixelWords(rgba: Uint8Array): Uint32Array | null {
  return rgba.byteOffset % 4 === 0 ? new Uint32Array(rgba.buffer, rgba.byteOffset, rgba.length >> 2) : null;
}

/**
 * Converts one 16x16 macroblock of `rgba` (width x height, 4 bytes a pixel) into the planes.
 * `words` (pixelWords of it) lets a 2x2 block of one colour, most of a phone's screen, be
 * converted once for all four pixels.
 */
export function rgbaMacroblockToYuv(
  rgba: Uint8Array,
  width: number,
  height: number,
  mbX: number,
  mbY: number,
  y: Uint8Array,
  u: Uint8Array,
  v: Uint8Array,
  lumaStride: number,
  words: Uint32Array | null = null,
): void {
  const chromaStride = lumaStride >> 1;
  // The last one-colour block's pixel and what it converted to.
  let flat = -1;
  let flatY = 0;
  let flatU = 0;
  let flatV = 0;
  // Rows and columns past the picture repeat its last ones: the padding a macroblock needs
  // costs no bits and is cropped away by the decoder.
  const inside = mbX * 16 + 16 <= width && mbY * 16 + 16 <= height;
  for (let dy = 0; dy < 16; dy += 2) {
    const py0 = inside ? mbY * 16 + dy : Math.min(mbY * 16 + dy, height - 1);
    const py1 = inside ? py0 + 1 : Math.min(mbY * 16 + dy + 1, height - 1);
    const row0 = (mbY * 16 + dy) * lumaStride + mbX * 16;
    const row1 = row0 + lumaStride;
    const chromaRow = ((mbY * 16 + dy) >> 1) * chromaStride + mbX * 8;
    for (let dx = 0; dx < 16; dx += 2) {
      const px0 = inside ? mbX * 16 + dx : Math.min(mbX * 16 + dx, width - 1);
      const px1 = inside ? px0 + 1 : Math.min(mbX * 16 + dx + 1, width - 1);
      const a = (py0 * width + px0) * 4;
      const b = (py0 * width + px1) * 4;
      const c = (py1 * width + px0) * 4;
      const d = (py1 * width + px1) * 4;
      if (words !== null) {
        const word = words[a >> 2]!;
        if (word === words[b >> 2] && word === words[c >> 2] && word === words[d >> 2]) {
          // One colour: the same Y' four times, and the average is the colour itself.
          if (word !== flat) {
            const r = rgba[a]!;
            const g = rgba[a + 1]!;
            const bl = rgba[a + 2]!;
            flat = word;
            flatY = ((66 * r + 129 * g + 25 * bl + 128) >> 8) + 16;
            flatU = ((-38 * r - 74 * g + 112 * bl + 128) >> 8) + 128;
            flatV = ((112 * r - 94 * g - 18 * bl + 128) >> 8) + 128;
          }
          y[row0 + dx] = flatY;
          y[row0 + dx + 1] = flatY;
          y[row1 + dx] = flatY;
          y[row1 + dx + 1] = flatY;
          u[chromaRow + (dx >> 1)] = flatU;
          v[chromaRow + (dx >> 1)] = flatV;
          continue;
        }
      }
      const ra = rgba[a]!;
      const ga = rgba[a + 1]!;
      const ba = rgba[a + 2]!;
      const rb = rgba[b]!;
      const gb = rgba[b + 1]!;
      const bb = rgba[b + 2]!;
      const rc = rgba[c]!;
      const gc = rgba[c + 1]!;
      const bc = rgba[c + 2]!;
      const rd = rgba[d]!;
      const gd = rgba[d + 1]!;
      const bd = rgba[d + 2]!;
      y[row0 + dx] = ((66 * ra + 129 * ga + 25 * ba + 128) >> 8) + 16;
      y[row0 + dx + 1] = ((66 * rb + 129 * gb + 25 * bb + 128) >> 8) + 16;
      y[row1 + dx] = ((66 * rc + 129 * gc + 25 * bc + 128) >> 8) + 16;
      y[row1 + dx + 1] = ((66 * rd + 129 * gd + 25 * bd + 128) >> 8) + 16;
      const r = (ra + rb + rc + rd + 2) >> 2;
      const g = (ga + gb + gc + gd + 2) >> 2;
      const bl = (ba + bb + bc + bd + 2) >> 2;
      u[chromaRow + (dx >> 1)] = ((-38 * r - 74 * g + 112 * bl + 128) >> 8) + 128;
      v[chromaRow + (dx >> 1)] = ((112 * r - 94 * g - 18 * bl + 128) >> 8) + 128;
    }
  }
}
