/**
 * Just enough of resources.arsc to resolve a string resource (an app label like
 * @string/app_name) to its default-configuration value.
 */
import {
  RES_STRING_POOL_TYPE,
  RES_TABLE_PACKAGE_TYPE,
  RES_TABLE_TYPE,
  RES_TABLE_TYPE_TYPE,
  ResourceFormatError,
  StringPool,
  TYPE_REFERENCE,
  TYPE_STRING,
  readChunkHeader,
} from './chunks.js';

const FLAG_COMPLEX = 0x0001;
const FLAG_COMPACT = 0x0008;
const TYPE_FLAG_SPARSE = 0x01;
const TYPE_FLAG_OFFSET16 = 0x02;
const NO_ENTRY = 0xffffffff;

interface TypeChunk {
  offset: number;
  defaultConfig: boolean;
}

export class ResourceTable {
  private globalStrings: StringPool | null = null;
  /** package id -> type id -> type chunks (one per configuration) */
  private readonly types = new Map<number, Map<number, TypeChunk[]>>();

  constructor(private readonly data: Buffer) {
    const root = readChunkHeader(data, 0);
    if (root.type !== RES_TABLE_TYPE) throw new ResourceFormatError('not a resource table');
    let p = root.headerSize;
    while (p < root.size) {
      const chunk = readChunkHeader(data, p);
      if (chunk.type === RES_STRING_POOL_TYPE) this.globalStrings = new StringPool(data, p);
      else if (chunk.type === RES_TABLE_PACKAGE_TYPE) this.readPackage(p, chunk.headerSize, chunk.size);
      p += chunk.size;
    }
  }

  private readPackage(offset: number, headerSize: number, size: number): void {
    const id = this.data.readUInt32LE(offset + 8);
    const byType = new Map<number, TypeChunk[]>();
    this.types.set(id, byType);
    let p = offset + headerSize;
    while (p < offset + size) {
      const chunk = readChunkHeader(this.data, p);
      if (chunk.type === RES_TABLE_TYPE_TYPE) {
        const typeId = this.data[p + 8]!;
        const configStart = p + 20;
        const configSize = this.data.readUInt32LE(configStart);
        let defaultConfig = true;
        for (let i = configStart + 4; i < configStart + configSize && i < p + chunk.headerSize; i++) {
          if (this.data[i] !== 0) {
            defaultConfig = false;
            break;
          }
        }
        const list = byType.get(typeId) ?? [];
        list.push({ offset: p, defaultConfig });
        byType.set(typeId, list);
      }
      p += chunk.size;
    }
  }

  /** The string a resource id stands for (following references), or null. */
  resolveString(resourceId: number, depth = 0): string | null {
    if (depth > 8) return null;
    const value = this.lookup(resourceId);
    if (!value) return null;
    if (value.dataType === TYPE_STRING) return this.globalStrings?.get(value.data) ?? null;
    if (value.dataType === TYPE_REFERENCE) return this.resolveString(value.data, depth + 1);
    return null;
  }

  private lookup(resourceId: number): { dataType: number; data: number } | null {
    const pkg = this.types.get(resourceId >>> 24);
    const chunks = pkg?.get((resourceId >>> 16) & 0xff);
    if (!chunks) return null;
    const index = resourceId & 0xffff;
    const ordered = [...chunks.filter((c) => c.defaultConfig), ...chunks.filter((c) => !c.defaultConfig)];
    for (const chunk of ordered) {
      const v = this.entryValue(chunk.offset, index);
      if (v) return v;
    }
    return null;
  }

  private entryValue(typeOffset: number, index: number): { dataType: number; data: number } | null {
    const d = this.data;
    const headerSize = d.readUInt16LE(typeOffset + 2);
    const flags = d[typeOffset + 9]!;
    const entryCount = d.readUInt32LE(typeOffset + 12);
    const entriesStart = typeOffset + d.readUInt32LE(typeOffset + 16);
    const table = typeOffset + headerSize;
    let entryOffset = NO_ENTRY;
    if (flags & TYPE_FLAG_SPARSE) {
      for (let i = 0; i < entryCount; i++) {
        if (d.readUInt16LE(table + i * 4) === index) {
          entryOffset = d.readUInt16LE(table + i * 4 + 2) * 4;
          break;
        }
      }
    } else if (index < entryCount) {
      if (flags & TYPE_FLAG_OFFSET16) {
        const o = d.readUInt16LE(table + index * 2);
        entryOffset = o === 0xffff ? NO_ENTRY : o * 4;
      } else entryOffset = d.readUInt32LE(table + index * 4);
    }
    if (entryOffset === NO_ENTRY) return null;
    const e = entriesStart + entryOffset;
    const entryFlags = d.readUInt16LE(e + 2);
    if (entryFlags & FLAG_COMPACT) return { dataType: entryFlags >>> 8, data: d.readUInt32LE(e + 4) };
    if (entryFlags & FLAG_COMPLEX) return null;
    const size = d.readUInt16LE(e);
    const v = e + size;
    return { dataType: d[v + 3]!, data: d.readUInt32LE(v + 4) };
  }
}
