/**
 * Parser for Android's binary XML (the compiled AndroidManifest.xml inside an APK).
 * Attribute names fall back to well-known android: resource ids when a shrinker emptied
 * the name strings.
 */
import {
  RES_STRING_POOL_TYPE,
  RES_XML_CDATA_TYPE,
  RES_XML_END_ELEMENT_TYPE,
  RES_XML_RESOURCE_MAP_TYPE,
  RES_XML_START_ELEMENT_TYPE,
  RES_XML_TYPE,
  ResourceFormatError,
  StringPool,
  TYPE_FLOAT,
  TYPE_INT_BOOLEAN,
  TYPE_INT_DEC,
  TYPE_INT_HEX,
  TYPE_NULL,
  TYPE_REFERENCE,
  TYPE_STRING,
  readChunkHeader,
} from './chunks.js';

/** A typed attribute value. References stay references; resolve them with resources.arsc. */
export type AxmlValue =
  | { type: 'string'; value: string }
  | { type: 'int'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'reference'; id: number }
  | { type: 'float'; value: number }
  | { type: 'other'; dataType: number; data: number };

export interface AxmlAttribute {
  namespace: string | null;
  name: string;
  resourceId: number | null;
  value: AxmlValue;
}

export interface AxmlElement {
  name: string;
  attributes: AxmlAttribute[];
  children: AxmlElement[];
  text: string;
}

/** android: attribute resource ids, for manifests whose name strings were stripped. */
const ANDROID_ATTRS: Record<number, string> = {
  0x01010001: 'label',
  0x01010002: 'icon',
  0x01010003: 'name',
  0x0101000f: 'debuggable',
  0x01010010: 'exported',
  0x01010021: 'targetPackage',
  0x0101020c: 'minSdkVersion',
  0x0101021b: 'versionCode',
  0x0101021c: 'versionName',
  0x01010202: 'targetActivity',
  0x01010270: 'targetSdkVersion',
  0x01010000: 'theme',
  0x0101001e: 'enabled',
};

export function parseAxml(data: Buffer): AxmlElement {
  const root = readChunkHeader(data, 0);
  if (root.type !== RES_XML_TYPE) throw new ResourceFormatError('not a binary XML document');
  let strings: StringPool | null = null;
  let resourceIds: number[] = [];
  const stack: AxmlElement[] = [];
  let top: AxmlElement | null = null;
  let p = root.headerSize;
  while (p < root.size) {
    const chunk = readChunkHeader(data, p);
    switch (chunk.type) {
      case RES_STRING_POOL_TYPE:
        strings = new StringPool(data, p);
        break;
      case RES_XML_RESOURCE_MAP_TYPE: {
        const n = (chunk.size - chunk.headerSize) / 4;
        resourceIds = Array.from({ length: n }, (_, i) => data.readUInt32LE(p + chunk.headerSize + i * 4));
        break;
      }
      case RES_XML_START_ELEMENT_TYPE: {
        if (!strings) throw new ResourceFormatError('element before string pool');
        const pool = strings;
        const ext = p + chunk.headerSize;
        const name = pool.get(data.readUInt32LE(ext + 4)) ?? '';
        const attrStart = data.readUInt16LE(ext + 8);
        const attrSize = data.readUInt16LE(ext + 10);
        const attrCount = data.readUInt16LE(ext + 12);
        const attributes: AxmlAttribute[] = [];
        for (let i = 0; i < attrCount; i++) {
          const a = ext + attrStart + i * attrSize;
          const nsIndex = data.readUInt32LE(a);
          const nameIndex = data.readUInt32LE(a + 4);
          const rawIndex = data.readUInt32LE(a + 8);
          const dataType = data[a + 15]!;
          const value = data.readUInt32LE(a + 16);
          const resourceId = nameIndex < resourceIds.length ? resourceIds[nameIndex]! : null;
          let attrName = pool.get(nameIndex) ?? '';
          if (attrName === '' && resourceId !== null)
            attrName = ANDROID_ATTRS[resourceId] ?? `0x${resourceId.toString(16)}`;
          attributes.push({
            namespace: nsIndex === 0xffffffff ? null : pool.get(nsIndex),
            name: attrName,
            resourceId,
            value: typedValue(pool, dataType, value, rawIndex),
          });
        }
        const el: AxmlElement = { name, attributes, children: [], text: '' };
        if (stack.length > 0) stack[stack.length - 1]!.children.push(el);
        else top ??= el;
        stack.push(el);
        break;
      }
      case RES_XML_END_ELEMENT_TYPE:
        stack.pop();
        break;
      case RES_XML_CDATA_TYPE: {
        const parent = stack[stack.length - 1];
        if (parent && strings) parent.text += strings.get(data.readUInt32LE(p + chunk.headerSize)) ?? '';
        break;
      }
      default:
        // namespaces and unknown chunks carry nothing we need
        break;
    }
    p += chunk.size;
  }
  if (!top) throw new ResourceFormatError('binary XML without elements');
  return top;
}

function typedValue(pool: StringPool, dataType: number, data: number, rawIndex: number): AxmlValue {
  switch (dataType) {
    case TYPE_STRING:
      return { type: 'string', value: pool.get(data) ?? '' };
    case TYPE_INT_DEC:
    case TYPE_INT_HEX:
      return { type: 'int', value: data | 0 };
    case TYPE_INT_BOOLEAN:
      return { type: 'bool', value: data !== 0 };
    case TYPE_REFERENCE:
      return { type: 'reference', id: data };
    case TYPE_FLOAT: {
      const b = Buffer.allocUnsafe(4);
      b.writeUInt32LE(data);
      return { type: 'float', value: b.readFloatLE(0) };
    }
    case TYPE_NULL:
      if (rawIndex !== 0xffffffff) return { type: 'string', value: pool.get(rawIndex) ?? '' };
      return { type: 'other', dataType, data };
    default:
      if (rawIndex !== 0xffffffff) return { type: 'string', value: pool.get(rawIndex) ?? '' };
      return { type: 'other', dataType, data };
  }
}

/** Attribute lookup by local name (any namespace). */
export function attr(el: AxmlElement, name: string): AxmlValue | undefined {
  return el.attributes.find((a) => a.name === name)?.value;
}

/** A value as text, the way aapt prints it in `dump xmltree` (references as @0x...). */
export function valueText(v: AxmlValue | undefined): string | undefined {
  if (!v) return undefined;
  switch (v.type) {
    case 'string':
      return v.value;
    case 'int':
    case 'float':
      return String(v.value);
    case 'bool':
      return String(v.value);
    case 'reference':
      return `@0x${v.id.toString(16).padStart(8, '0')}`;
    default:
      return String(v.data);
  }
}

/** Renders the tree as plain XML (for debugging and tests). */
export function toXml(el: AxmlElement, indent = ''): string {
  const attrs = el.attributes
    .map((a) => ` ${a.namespace ? 'android:' : ''}${a.name}="${valueText(a.value) ?? ''}"`)
    .join('');
  if (el.children.length === 0) return `${indent}<${el.name}${attrs}/>\n`;
  return `${indent}<${el.name}${attrs}>\n${el.children.map((c) => toXml(c, indent + '  ')).join('')}${indent}</${el.name}>\n`;
}
