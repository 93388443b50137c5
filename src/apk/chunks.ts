/** Shared pieces of Android's binary resource formats (ResChunk_header, ResStringPool). */

export const RES_STRING_POOL_TYPE = 0x0001;
export const RES_TABLE_TYPE = 0x0002;
export const RES_XML_TYPE = 0x0003;
export const RES_XML_START_ELEMENT_TYPE = 0x0102;
export const RES_XML_END_ELEMENT_TYPE = 0x0103;
export const RES_XML_CDATA_TYPE = 0x0104;
export const RES_XML_RESOURCE_MAP_TYPE = 0x0180;
export const RES_TABLE_PACKAGE_TYPE = 0x0200;
export const RES_TABLE_TYPE_TYPE = 0x0201;

// Res_value data types
export const TYPE_NULL = 0x00;
export const TYPE_REFERENCE = 0x01;
export const TYPE_STRING = 0x03;
export const TYPE_FLOAT = 0x04;
export const TYPE_INT_DEC = 0x10;
export const TYPE_INT_HEX = 0x11;
export const TYPE_INT_BOOLEAN = 0x12;

export class ResourceFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResourceFormatError';
  }
}

export interface ChunkHeader {
  type: number;
  headerSize: number;
  size: number;
}

export function readChunkHeader(data: Buffer, offset: number): ChunkHeader {
  if (offset + 8 > data.length) throw new ResourceFormatError(`chunk header out of range at ${offset}`);
  const header = {
    type: data.readUInt16LE(offset),
    headerSize: data.readUInt16LE(offset + 2),
    size: data.readUInt32LE(offset + 4),
  };
  if (header.size < 8 || offset + header.size > data.length)
    throw new ResourceFormatError(`bad chunk size at ${offset}`);
  return header;
}

/** A ResStringPool; strings are decoded on first use. */
export class StringPool {
  private readonly cache = new Map<number, string>();
  readonly count: number;
  private readonly utf8: boolean;
  private readonly stringsStart: number;
  private readonly offsetsStart: number;

  constructor(
    private readonly data: Buffer,
    private readonly offset: number,
  ) {
    const header = readChunkHeader(data, offset);
    if (header.type !== RES_STRING_POOL_TYPE) throw new ResourceFormatError('expected a string pool');
    this.count = data.readUInt32LE(offset + 8);
    const flags = data.readUInt32LE(offset + 16);
    this.utf8 = (flags & 0x100) !== 0;
    this.stringsStart = offset + data.readUInt32LE(offset + 20);
    this.offsetsStart = offset + header.headerSize;
  }

  get(index: number): string | null {
    if (index < 0 || index >= this.count || index === 0xffffffff) return null;
    const cached = this.cache.get(index);
    if (cached !== undefined) return cached;
    const d = this.data;
    let p = this.stringsStart + d.readUInt32LE(this.offsetsStart + index * 4);
    let s: string;
    if (this.utf8) {
      // char count (1 or 2 bytes), then byte count (1 or 2 bytes)
      p += (d[p]! & 0x80) !== 0 ? 2 : 1;
      let len = d[p]!;
      if ((len & 0x80) !== 0) {
        len = ((len & 0x7f) << 8) | d[p + 1]!;
        p += 2;
      } else p += 1;
      s = d.toString('utf8', p, p + len);
    } else {
      let len = d.readUInt16LE(p);
      if ((len & 0x8000) !== 0) {
        len = ((len & 0x7fff) << 16) | d.readUInt16LE(p + 2);
        p += 4;
      } else p += 2;
      s = d.toString('utf16le', p, p + len * 2);
    }
    this.cache.set(index, s);
    return s;
  }
}
