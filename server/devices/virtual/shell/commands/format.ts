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
