/**
 * Builds small but real APKs for tests: a zip with a binary AndroidManifest.xml (written
 * with Android's compiled XML format), so installs exercise the same parsing as real apps.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateRawSync } from 'node:zlib';

const ANDROID_NS = 'http://schemas.android.com/apk/res/android';
const ATTR_IDS: Record<string, number> = {
  label: 0x01010001,
  name: 0x01010003,
  debuggable: 0x0101000f,
  exported: 0x01010010,
  targetPackage: 0x01010021,
  minSdkVersion: 0x0101020c,
  versionCode: 0x0101021b,
  versionName: 0x0101021c,
  targetSdkVersion: 0x01010270,
};

export type XmlValue = string | number | boolean;

export interface XmlElement {
  name: string;
  /** `android:x` attributes use the android namespace; others none. */
  attrs?: Record<string, XmlValue>;
  children?: XmlElement[];
}

/** Compiles an element tree into Android binary XML (UTF-16 string pool). */
export function compileAxml(root: XmlElement): Buffer {
  // Attribute names with resource ids must come first in the pool, matching the map.
  const androidAttrs = new Set<string>();
  const others = new Set<string>();
  const walk = (el: XmlElement) => {
    others.add(el.name);
    for (const [k, v] of Object.entries(el.attrs ?? {})) {
      if (k.startsWith('android:') && ATTR_IDS[k.slice(8)] !== undefined) androidAttrs.add(k.slice(8));
      else others.add(k.replace(/^android:/, ''));
      if (typeof v === 'string') others.add(v);
    }
    for (const c of el.children ?? []) walk(c);
  };
  walk(root);
  others.add('android');
  others.add(ANDROID_NS);
  const strings = [...androidAttrs, ...[...others].filter((s) => !androidAttrs.has(s))];
  const index = (s: string) => strings.indexOf(s);

  const chunks: Buffer[] = [];
  // string pool
  const encoded = strings.map((s) => {
    const b = Buffer.alloc(2 + s.length * 2 + 2);
    b.writeUInt16LE(s.length, 0);
    b.write(s, 2, 'utf16le');
    return b;
  });
  let offset = 0;
  const offsets = encoded.map((e) => {
    const o = offset;
    offset += e.length;
    return o;
  });
  const stringData = Buffer.concat(encoded);
  const padded = Buffer.concat([stringData, Buffer.alloc((4 - (stringData.length % 4)) % 4)]);
  const poolHeader = Buffer.alloc(28);
  const poolSize = 28 + strings.length * 4 + padded.length;
  poolHeader.writeUInt16LE(0x0001, 0);
  poolHeader.writeUInt16LE(28, 2);
  poolHeader.writeUInt32LE(poolSize, 4);
  poolHeader.writeUInt32LE(strings.length, 8);
  poolHeader.writeUInt32LE(0, 12);
  poolHeader.writeUInt32LE(0, 16);
  poolHeader.writeUInt32LE(28 + strings.length * 4, 20);
  poolHeader.writeUInt32LE(0, 24);
  const offsetTable = Buffer.alloc(strings.length * 4);
  offsets.forEach((o, i) => offsetTable.writeUInt32LE(o, i * 4));
  chunks.push(poolHeader, offsetTable, padded);
  // resource map
  const ids = [...androidAttrs].map((a) => ATTR_IDS[a]!);
  const map = Buffer.alloc(8 + ids.length * 4);
  map.writeUInt16LE(0x0180, 0);
  map.writeUInt16LE(8, 2);
  map.writeUInt32LE(map.length, 4);
  ids.forEach((id, i) => map.writeUInt32LE(id, 8 + i * 4));
  chunks.push(map);
  const nsChunk = (type: number) => {
    const b = Buffer.alloc(24);
    b.writeUInt16LE(type, 0);
    b.writeUInt16LE(16, 2);
    b.writeUInt32LE(24, 4);
    b.writeUInt32LE(1, 8);
    b.writeUInt32LE(0xffffffff, 12);
    b.writeUInt32LE(index('android'), 16);
    b.writeUInt32LE(index(ANDROID_NS), 20);
    return b;
  };
  chunks.push(nsChunk(0x0100));
  const element = (el: XmlElement) => {
    const attrs = Object.entries(el.attrs ?? {});
    const b = Buffer.alloc(36 + attrs.length * 20);
    b.writeUInt16LE(0x0102, 0);
    b.writeUInt16LE(16, 2);
    b.writeUInt32LE(b.length, 4);
    b.writeUInt32LE(1, 8);
    b.writeUInt32LE(0xffffffff, 12);
    b.writeUInt32LE(0xffffffff, 16);
    b.writeUInt32LE(index(el.name), 20);
    b.writeUInt16LE(20, 24);
    b.writeUInt16LE(20, 26);
    b.writeUInt16LE(attrs.length, 28);
    attrs.forEach(([k, v], i) => {
      const a = 36 + i * 20;
      const isAndroid = k.startsWith('android:');
      const local = k.replace(/^android:/, '');
      b.writeUInt32LE(isAndroid ? index(ANDROID_NS) : 0xffffffff, a);
      b.writeUInt32LE(index(local), a + 4);
      b.writeUInt16LE(8, a + 12);
      if (typeof v === 'string') {
        b.writeUInt32LE(index(v), a + 8);
        b[a + 15] = 0x03;
        b.writeUInt32LE(index(v), a + 16);
      } else {
        b.writeUInt32LE(0xffffffff, a + 8);
        b[a + 15] = typeof v === 'boolean' ? 0x12 : 0x10;
        b.writeUInt32LE(typeof v === 'boolean' ? (v ? 0xffffffff : 0) : v >>> 0, a + 16);
      }
    });
    chunks.push(b);
    for (const c of el.children ?? []) element(c);
    const end = Buffer.alloc(24);
    end.writeUInt16LE(0x0103, 0);
    end.writeUInt16LE(16, 2);
    end.writeUInt32LE(24, 4);
    end.writeUInt32LE(1, 8);
    end.writeUInt32LE(0xffffffff, 12);
    end.writeUInt32LE(0xffffffff, 16);
    end.writeUInt32LE(index(el.name), 20);
    chunks.push(end);
  };
  element(root);
  chunks.push(nsChunk(0x0101));
  const body = Buffer.concat(chunks);
  const header = Buffer.alloc(8);
  header.writeUInt16LE(0x0003, 0);
  header.writeUInt16LE(8, 2);
  header.writeUInt32LE(8 + body.length, 4);
  return Buffer.concat([header, body]);
}

/**
 * Writes a zip archive; entries are deflated unless `stored` is set. `signingBlock` goes
 * between the entries and the central directory, where an APK keeps its APK Signing Block.
 */
export function buildZip(
  entries: { name: string; data: Buffer; stored?: boolean }[],
  signingBlock: Buffer = Buffer.alloc(0),
): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const payload = e.stored ? e.data : deflateRawSync(e.data);
    const crc = crc32(e.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.stored ? 0 : 8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(payload.length, 18);
    local.writeUInt32LE(e.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, payload);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.stored ? 0 : 8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(payload.length, 20);
    central.writeUInt32LE(e.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + payload.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset + signingBlock.length, 16);
  return Buffer.concat([...locals, signingBlock, cd, end]);
}

/** u32-length-prefixed values, as the APK Signature Scheme v2 block nests them. */
function lengthPrefixed(...values: Buffer[]): Buffer {
  return Buffer.concat(
    values.flatMap((v) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(v.length);
      return [length, v];
    }),
  );
}

/**
 * An APK Signing Block with a v2 signer whose certificate is a stand-in made from `signer`:
 * the phone compares certificate digests and checks no signature, so two names make two
 * signers. (The real APKs under node_modules carry real certificates.)
 */
export function v2SigningBlock(signer: string): Buffer {
  const certificate = Buffer.from(`stand-in certificate of ${signer}`);
  const signedData = lengthPrefixed(lengthPrefixed(), lengthPrefixed(certificate), lengthPrefixed());
  const value = lengthPrefixed(
    lengthPrefixed(lengthPrefixed(signedData, lengthPrefixed(), lengthPrefixed())),
  );
  const pair = Buffer.alloc(12);
  pair.writeBigUInt64LE(BigInt(4 + value.length), 0);
  pair.writeUInt32LE(0x7109871a, 8);
  const pairs = Buffer.concat([pair, value]);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(pairs.length + 8 + 16));
  return Buffer.concat([size, pairs, size, Buffer.from('APK Sig Block 42', 'latin1')]);
}

export interface TestApkOptions {
  package: string;
  versionCode?: number;
  versionName?: string;
  /** Literal application label; omitted means the package's last segment is shown. */
  label?: string;
  /** Activity classes (relative names allowed); the first gets MAIN/LAUNCHER when launcher is true. */
  activities?: string[];
  launcher?: boolean;
  services?: string[];
  permissions?: string[];
  instrumentation?: { name: string; targetPackage: string };
  minSdk?: number;
  /** targetSdkVersion (default 34). */
  targetSdk?: number;
  debuggable?: boolean;
  /** A split APK of the package (`split="config.arm64_v8a"`) instead of its base. */
  split?: string;
  /** ABIs to add a native library for (`lib/<abi>/libapp.so`). */
  nativeAbis?: string[];
  /** Sign with a v2 block whose certificate stands for this signer (default: unsigned). */
  signer?: string;
}

export function buildTestApk(o: TestApkOptions): Buffer {
  const activities = (o.activities ?? []).map((name, i) => ({
    name: 'activity',
    attrs: { 'android:name': name, 'android:exported': true },
    children:
      i === 0 && o.launcher
        ? [
            {
              name: 'intent-filter',
              children: [
                { name: 'action', attrs: { 'android:name': 'android.intent.action.MAIN' } },
                { name: 'category', attrs: { 'android:name': 'android.intent.category.LAUNCHER' } },
              ],
            },
          ]
        : [],
  }));
  const appAttrs: Record<string, XmlValue> = {};
  if (o.label !== undefined) appAttrs['android:label'] = o.label;
  if (o.debuggable) appAttrs['android:debuggable'] = true;
  const manifest: XmlElement = {
    name: 'manifest',
    attrs: {
      'android:versionCode': o.versionCode ?? 1,
      'android:versionName': o.versionName ?? '1.0',
      package: o.package,
      ...(o.split !== undefined ? { split: o.split } : {}),
    },
    children: [
      {
        name: 'uses-sdk',
        attrs: { 'android:minSdkVersion': o.minSdk ?? 26, 'android:targetSdkVersion': o.targetSdk ?? 34 },
      },
      ...(o.permissions ?? []).map((p) => ({ name: 'uses-permission', attrs: { 'android:name': p } })),
      ...(o.instrumentation
        ? [
            {
              name: 'instrumentation',
              attrs: {
                'android:name': o.instrumentation.name,
                'android:targetPackage': o.instrumentation.targetPackage,
              },
            },
          ]
        : []),
      {
        name: 'application',
        attrs: appAttrs,
        children: [
          ...activities,
          ...(o.services ?? []).map((s) => ({ name: 'service', attrs: { 'android:name': s } })),
        ],
      },
    ],
  };
  return buildZip(
    [
      { name: 'AndroidManifest.xml', data: compileAxml(manifest) },
      { name: 'classes.dex', data: Buffer.from('dex\n035\0'), stored: true },
      ...(o.nativeAbis ?? []).map((abi) => ({
        name: `lib/${abi}/libapp.so`,
        data: Buffer.from('\x7fELF'),
        stored: true,
      })),
    ],
    o.signer !== undefined ? v2SigningBlock(o.signer) : undefined,
  );
}

/** Builds a test APK into a file named `name` in a fresh temporary directory; returns its path. */
export function testApkFile(name: string, o: TestApkOptions): string {
  const file = join(mkdtempSync(join(tmpdir(), 'phonelease-apk-')), name);
  writeFileSync(file, buildTestApk(o));
  return file;
}
