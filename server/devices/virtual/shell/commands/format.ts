/** Formatting shared by the file applets (ls -l, stat) and dumpsys-style output. */
import { S_IFCHR, S_IFDIR, S_IFLNK, S_IFMT } from '../../fs.js';
import type { Stat } from '../../fs.js';

const NAMES: Record<number, string> = {
  0: 'root',
  1000: 'system',
  1001: 'radio',
  1002: 'bluetooth',
  1015: 'sdcard_rw',
  1023: 'media_rw',
  1028: 'sdcard_r',
  2000: 'shell',
  3003: 'inet',
  9997: 'everybody',
};

export function userName(uid: number): string {
  if (NAMES[uid]) return NAMES[uid];
  if (uid >= 10000 && uid < 20000) return `u0_a${uid - 10000}`;
  return String(uid);
}

export function modeString(mode: number): string {
  const type = mode & S_IFMT;
  const t = type === S_IFDIR ? 'd' : type === S_IFLNK ? 'l' : type === S_IFCHR ? 'c' : '-';
  const bits = 'rwxrwxrwx';
  let out = t;
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? bits[i] : '-';
  if (mode & 0o4000) out = out.slice(0, 3) + (mode & 0o100 ? 's' : 'S') + out.slice(4);
  if (mode & 0o2000) out = out.slice(0, 6) + (mode & 0o010 ? 's' : 'S') + out.slice(7);
  if (mode & 0o1000) out = out.slice(0, 9) + (mode & 0o001 ? 't' : 'T');
  return out;
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `2024-01-01 00:00` as toybox ls -l prints times (the phone runs in UTC). */
export function lsDate(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
}

/** `2024-01-01 00:00:00` (dumpsys timestamps). */
export function fullDate(ms: number): string {
  const d = new Date(ms);
  return `${lsDate(ms)}:${pad2(d.getUTCSeconds())}`;
}

export function statDate(ms: number): string {
  const ns = String(Math.floor((ms % 1000) * 1e6)).padStart(9, '0');
  return `${fullDate(ms)}.${ns} +0000`;
}

export function fileType(st: Stat): string {
  switch (st.kind) {
    case 'dir':
      return 'directory';
    case 'link':
      return 'symbolic link';
    case 'chr':
      return 'character special file';
    default:
      return st.size === 0 ? 'regular empty file' : 'regular file';
  }
}

/** human_readable_long's styles (toybox lib/lib.h): HR_SPACE, HR_B, HR_1000, HR_NODOT. */
const HR_SPACE = 1;
const HR_B = 2;
export const HR_1000 = 4;
const HR_NODOT = 8;

/**
 * toybox 0.8.9's human_readable_long (lib/lib.c): divides (rounding) by 1024 (1000 with
 * HR_1000) until at most `digits` digits are left, starting from `unit` (0 bytes, 1 K...);
 * a single digit gets one decimal (`5.0G`) unless HR_NODOT, then the unit (lower-case `k`
 * with HR_1000), or `B` for plain bytes with HR_B.
 */
export function humanReadableLong(value: number, digits: number, unit: number, style: number): string {
  const divisor = style & HR_1000 ? 1000 : 1024;
  let num = Math.max(0, Math.floor(value));
  let snap = 0;
  for (; String(num).length > digits; unit++) {
    snap = num;
    num = Math.floor((snap + divisor / 2) / divisor);
  }
  let text = String(num);
  if (!(style & HR_NODOT) && unit && text.length === 1) {
    // Redo the rounding for the 1.2M case.
    const whole = Math.floor(snap / divisor);
    const tenth = Math.floor(Math.floor(((snap - whole * divisor) * 100 + 50) / divisor) / 10);
    text = `${whole}.${tenth}`;
  }
  if (style & HR_SPACE) text += ' ';
  if (unit) {
    const letter = ' kMGTPEZY'[unit] ?? '?';
    text += style & HR_1000 ? letter : letter.toUpperCase();
  } else if (style & HR_B) text += 'B';
  return text;
}

/** toybox's human_readable (three digits at most): `512`, `4.8K`, `111G`; what df, du, ls and free -h print. */
export function humanReadable3(value: number, style = 0): string {
  return humanReadableLong(value, 3, 0, style);
}
