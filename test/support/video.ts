/**
 * Checking videos with Debian's ffmpeg and ffprobe (the tests' referees: phonelease itself
 * never runs them): what ffprobe says a file is, its packets, every decoded frame, and
 * reference files made by libx264. Also phone screens to encode, from the virtual phone's UI.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPhoneUi } from '../../server/devices/virtual/ui/index.js';
import type { PhoneUi, UiNodeInfo } from '../../server/devices/virtual/ui/types.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

export interface RunResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Runs ffmpeg or ffprobe; a missing tool is an error that says how to install it. */
export function run(tool: 'ffmpeg' | 'ffprobe', args: string[]): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { encoding: 'buffer', maxBuffer: 1024 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(
          new Error(`${tool} is not installed: the video tests check files with it (apt-get install ffmpeg)`),
        );
        return;
      }
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr.toString() });
    });
  });
}

async function runOk(tool: 'ffmpeg' | 'ffprobe', args: string[]): Promise<Buffer> {
  const r = await run(tool, args);
  if (r.code !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

export interface ProbedStream {
  codec_name: string;
  profile: string;
  width: number;
  height: number;
  pix_fmt: string;
  color_range?: string;
  color_space?: string;
  nb_read_frames: string;
  duration: string;
  /** The lowest frame rate every timestamp is on, as a fraction ("60/1"). */
  r_frame_rate: string;
}

/** ffprobe's view of a file's first video stream and its duration, frames counted by decoding. */
export async function probe(file: string): Promise<{ stream: ProbedStream; duration: number }> {
  const out = await runOk('ffprobe', [
    '-v',
    'error',
    '-count_frames',
    '-select_streams',
    'v:0',
    '-show_streams',
    '-show_format',
    '-of',
    'json',
    file,
  ]);
  const json = JSON.parse(out.toString()) as { streams: ProbedStream[]; format: { duration: string } };
  return { stream: json.streams[0]!, duration: Number(json.format.duration) };
}

export interface Packet {
  pts: number;
  duration: number;
  key: boolean;
}

/** The video packets (samples) in presentation order's timestamps, in seconds. */
export async function packets(file: string): Promise<Packet[]> {
  const out = await runOk('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'packet=pts_time,duration_time,flags',
    '-of',
    'json',
    file,
  ]);
  const json = JSON.parse(out.toString()) as {
    packets: Array<{ pts_time: string; duration_time: string; flags: string }>;
  };
  return json.packets.map((p) => ({
    pts: Number(p.pts_time),
    duration: Number(p.duration_time),
    key: p.flags.startsWith('K'),
  }));
}

/**
 * Output every decoded frame once, as decoded: no frames dropped or repeated to make a
 * constant rate, and each keeps its own timestamp (not one rounded to a frame rate).
 */
const EVERY_FRAME = ['-fps_mode', 'passthrough', '-enc_time_base', '-1'];

/** Decodes every frame and returns what ffmpeg complained about (empty for a clean stream). */
export async function decodeErrors(file: string): Promise<string> {
  const r = await run('ffmpeg', ['-v', 'error', '-xerror', '-i', file, ...EVERY_FRAME, '-f', 'null', '-']);
  return r.code === 0 ? r.stderr.trim() : `exit ${r.code}: ${r.stderr.trim()}`;
}

/** Every decoded frame, as raw pixels of `pixFmt` after the filters in `vf` (if any). */
async function decodeRaw(file: string, pixFmt: string, vf?: string): Promise<Buffer> {
  const filter = vf ? ['-vf', vf] : [];
  return runOk('ffmpeg', [
    '-v',
    'error',
    '-i',
    file,
    ...EVERY_FRAME,
    ...filter,
    '-f',
    'rawvideo',
    '-pix_fmt',
    pixFmt,
    '-',
  ]);
}

/** Every decoded frame as planar Y'CbCr 4:2:0, as the decoder output it (no conversion). */
export async function decodeYuv(file: string, width: number, height: number): Promise<Uint8Array[]> {
  return split(await decodeRaw(file, 'yuv420p'), (width * height * 3) / 2);
}

/**
 * Every decoded frame converted to RGB by ffmpeg, reading the stream as BT.601 limited range
 * (what its VUI says) with exact rounding, so that only the encoding's loss remains.
 */
export async function decodeRgb(file: string, width: number, height: number): Promise<Uint8Array[]> {
  const vf =
    'scale=in_range=tv:in_color_matrix=bt601:flags=accurate_rnd+full_chroma_int+bitexact,format=rgb24';
  return split(await decodeRaw(file, 'rgb24', vf), width * height * 3);
}

/** An MD5 per decoded frame (ffmpeg's framemd5), to compare two files' pictures. */
export async function frameHashes(file: string): Promise<string[]> {
  const out = await runOk('ffmpeg', [
    '-v',
    'error',
    '-i',
    file,
    '-map',
    '0:v:0',
    ...EVERY_FRAME,
    '-f',
    'framemd5',
    '-',
  ]);
  return out
    .toString()
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(',').at(-1)!.trim());
}

function split(raw: Buffer, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at + size <= raw.length; at += size) out.push(raw.subarray(at, at + size));
  return out;
}

/** PSNR in dB of an RGB24 frame against the RGBA frame it was made from. */
export function psnrRgb(rgba: Uint8Array, rgb: Uint8Array): number {
  let sum = 0;
  const pixels = rgba.length / 4;
  for (let p = 0; p < pixels; p++) {
    for (let c = 0; c < 3; c++) {
      const d = rgba[p * 4 + c]! - rgb[p * 3 + c]!;
      sum += d * d;
    }
  }
  const mse = sum / (pixels * 3);
  return mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse);
}

export interface Libx264Options {
  width: number;
  height: number;
  seconds: number;
  fps: number;
  /** 'baseline' writes no B-frames; 'high' writes them (composition offsets, an edit list). */
  profile: 'baseline' | 'high';
  /** Adds a subtitle track, so the file has another track's data between the video's. */
  subtitles?: boolean;
  /** ffmpeg's test pattern to encode (default testsrc2). */
  pattern?: string;
}

/** An MP4 made by ffmpeg with libx264 from a test pattern, as a reference file from elsewhere. */
export async function libx264(file: string, o: Libx264Options): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'phonelease-x264-'));
  try {
    const args = [
      '-v',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `${o.pattern ?? 'testsrc2'}=size=${o.width}x${o.height}:rate=${o.fps}`,
    ];
    if (o.subtitles) {
      const srt = join(dir, 'captions.srt');
      writeFileSync(
        srt,
        '1\n00:00:00,000 --> 00:00:00,500\nfirst\n\n2\n00:00:00,500 --> 00:00:01,000\nsecond\n',
      );
      args.push('-i', srt);
    }
    args.push('-t', String(o.seconds), '-map', '0:v');
    if (o.subtitles) args.push('-map', '1:s', '-c:s', 'mov_text');
    args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-profile:v', o.profile, '-pix_fmt', 'yuv420p');
    if (o.profile === 'high') args.push('-bf', '2', '-x264-params', 'b-adapt=0');
    args.push(file);
    await runOk('ffmpeg', args);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function readBytes(file: string): Uint8Array {
  return new Uint8Array(readFileSync(file));
}

/** A virtual phone's UI on its own (no system side), with a fixed clock, to draw screens. */
export function phoneUi(): PhoneUi {
  const settings = new Map<string, string>();
  return createPhoneUi(
    {
      launcherApps: () => [
        { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
        { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
      ],
      log: () => undefined,
      setting: (ns, key) => settings.get(`${ns}/${key}`) ?? null,
      setSetting: (ns, key, value) => void settings.set(`${ns}/${key}`, value),
    },
    {
      width: 720,
      height: 1280,
      density: 320,
      identity: DEVICE,
      now: () => new Date(2025, 0, 6, 9, 41),
    },
  );
}

/** Taps the centre of the view with this resource id (throws when the screen has none). */
export function tapId(ui: PhoneUi, resourceId: string): void {
  const find = (n: UiNodeInfo): UiNodeInfo | undefined =>
    n.resourceId === resourceId ? n : n.children.map(find).find((x) => x !== undefined);
  const node = ui.viewTree && find(ui.viewTree());
  if (!node) throw new Error(`no view ${resourceId} on the screen`);
  ui.tap((node.bounds.left + node.bounds.right) / 2, (node.bounds.top + node.bounds.bottom) / 2);
}

/**
 * Screens a person sees using the phone: the launcher, the Login app, typing into it, a
 * failed login, Settings. Each entry is a copy of the screen's RGBA pixels.
 */
export function phoneSession(ui: PhoneUi = phoneUi()): Uint8Array[] {
  const frames: Uint8Array[] = [ui.renderRgba().slice()];
  ui.launch('com.phonelease.login');
  frames.push(ui.renderRgba().slice());
  tapId(ui, 'com.phonelease.login:id/username');
  for (const c of 'demo') {
    ui.text(c);
    frames.push(ui.renderRgba().slice());
  }
  tapId(ui, 'com.phonelease.login:id/password');
  ui.text('nope');
  frames.push(ui.renderRgba().slice());
  tapId(ui, 'com.phonelease.login:id/login');
  frames.push(ui.renderRgba().slice());
  ui.launch('com.android.settings');
  frames.push(ui.renderRgba().slice());
  return frames;
}
