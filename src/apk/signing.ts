/**
 * Who signed an APK: the SHA-256 digests of its signing certificates (what `apksigner verify
 * --print-certs` calls the certificate SHA-256 digest). Android refuses an update whose
 * signers differ from the installed app's (INSTALL_FAILED_UPDATE_INCOMPATIBLE); the phone
 * compares these digests and checks no signature, as it cannot run the app's code anyway.
 *
 * Read as Android reads them: the APK Signature Scheme v3 or v2 block (the "APK Signing
 * Block" right before the zip's central directory) when there is one, else the v1 (JAR)
 * signature's PKCS#7 block under META-INF/.
 */
import { createHash } from 'node:crypto';
import type { ZipReader } from './zip.js';

const BLOCK_MAGIC = Buffer.from('APK Sig Block 42', 'latin1');
const V2_ID = 0x7109871a;
const V3_ID = 0xf05368c0;

/** Certificate digests (hex), sorted; empty for an unsigned APK or one whose signature cannot be read. */
export function signerDigests(apk: Buffer, zip: ZipReader): string[] {
  const certificates = signatureSchemeCertificates(apk, zip.centralDirectoryOffset) ?? jarCertificates(zip);
  return [...new Set(certificates.map((der) => createHash('sha256').update(der).digest('hex')))].sort();
}

/** The first certificate of each signer in the v3 (preferred) or v2 block, or null without one. */
function signatureSchemeCertificates(apk: Buffer, cdOffset: number): Buffer[] | null {
  // Footer: u64 size, 16 bytes magic, immediately before the central directory.
  if (cdOffset < 32 || !apk.subarray(cdOffset - 16, cdOffset).equals(BLOCK_MAGIC)) return null;
  const size = Number(apk.readBigUInt64LE(cdOffset - 24));
  const start = cdOffset - size - 8;
  if (start < 0 || Number(apk.readBigUInt64LE(start)) !== size) return null;
  const pairs = new Map<number, Buffer>();
  for (let p = start + 8; p + 12 <= cdOffset - 24;) {
    const length = Number(apk.readBigUInt64LE(p));
    if (length < 4 || p + 8 + length > cdOffset - 24) return null;
    pairs.set(apk.readUInt32LE(p + 8), apk.subarray(p + 12, p + 8 + length));
    p += 8 + length;
  }
  const block = pairs.get(V3_ID) ?? pairs.get(V2_ID);
  if (!block) return null;
  try {
    // signers: [signer: [signed data: [digests][certificates: [cert]...]...]...]
    return lengthPrefixed(lengthPrefixed(block)[0] ?? Buffer.alloc(0)).flatMap((signer) => {
      const signedData = lengthPrefixed(signer)[0];
      const certificates = signedData ? lengthPrefixed(signedData)[1] : undefined;
      const first = certificates ? lengthPrefixed(certificates)[0] : undefined;
      return first ? [first] : [];
    });
  } catch {
    return null;
  }
}

/** Splits a sequence of u32-length-prefixed values. */
function lengthPrefixed(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let p = 0; p < data.length;) {
    if (p + 4 > data.length) throw new RangeError('truncated length');
    const length = data.readUInt32LE(p);
    if (p + 4 + length > data.length) throw new RangeError('truncated value');
    out.push(data.subarray(p + 4, p + 4 + length));
    p += 4 + length;
  }
  return out;
}

/** The certificates of the v1 signature's PKCS#7 SignedData blocks (META-INF/*.RSA, .DSA, .EC). */
function jarCertificates(zip: ZipReader): Buffer[] {
  const out: Buffer[] = [];
  for (const name of zip.entries.keys()) {
    if (!/^META-INF\/[^/]+\.(RSA|DSA|EC)$/i.test(name)) continue;
    try {
      out.push(...pkcs7Certificates(zip.read(name) ?? Buffer.alloc(0)));
    } catch {
      // An unreadable block counts as no signature, as for an unsigned APK.
    }
  }
  return out;
}

interface Der {
  tag: number;
  /** The value's bytes. */
  value: Buffer;
  /** The whole element, header included. */
  whole: Buffer;
}

function der(data: Buffer, at = 0): Der {
  const tag = data[at]!;
  let length = data[at + 1]!;
  let header = 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new RangeError('unsupported DER length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + data[at + 2 + i]!;
    header += bytes;
  }
  if (at + header + length > data.length) throw new RangeError('truncated DER');
  return {
    tag,
    value: data.subarray(at + header, at + header + length),
    whole: data.subarray(at, at + header + length),
  };
}

function children(parent: Buffer): Der[] {
  const out: Der[] = [];
  for (let p = 0; p < parent.length;) {
    const child = der(parent, p);
    out.push(child);
    p += child.whole.length;
  }
  return out;
}

/**
 * ContentInfo { contentType, [0] SignedData { version, digestAlgorithms, encapContentInfo,
 * [0] IMPLICIT certificates, ... } } (RFC 5652): the certificates' DER.
 */
function pkcs7Certificates(block: Buffer): Buffer[] {
  const contentInfo = children(der(block).value);
  const explicit = contentInfo.find((c) => c.tag === 0xa0);
  if (!explicit) return [];
  const signedData = children(der(explicit.value).value);
  const certificates = signedData.find((c) => c.tag === 0xa0);
  return certificates ? children(certificates.value).map((c) => c.whole) : [];
}
