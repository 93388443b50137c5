/**
 * The device backend interface: what the runtime needs from a phone, whatever it is
 * (the built-in virtual phone, an Android SDK emulator). The runtime owns admission,
 * deadlines, billing and profile bookkeeping; a backend only boots, serves and stops phones.
 */
import type { Socket } from 'node:net';

export interface ScreenSize {
  w: number;
  h: number;
}

export interface AppSummary {
  package: string;
  label: string;
}

/** Input a viewer or the ops endpoints send to a phone. Coordinates are screen pixels. */
export type PhoneInput =
  | { type: 'tap'; x: number; y: number }
  | { type: 'swipe'; x1: number; y1: number; x2: number; y2: number; durationMs?: number }
  | { type: 'text'; text: string }
  | { type: 'key'; key: 'home' | 'back' | 'enter' | 'del' };

export interface DeviceLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface BootRequest {
  /** Session id, for logs and names; never a secret. */
  sessionId: string;
  /**
   * The saved profile phone to start from, or null for a temporary phone. The directory
   * holds what an earlier `shutdown({ saveTo })` wrote; it may be absent or empty (a
   * fresh profile). The backend only reads it.
   */
  restoreFrom: string | null;
  /** Aborted when the session ends (deadline, closure) before the boot finishes. */
  signal: AbortSignal;
  log: DeviceLogger;
}

export interface DeviceBackend {
  readonly name: 'virtual' | 'emulator';
  /** Typical boot time in ms before any boot was measured (for eta_seconds). */
  readonly typicalBootMs: number;
  /** How a boot starts: `cold`, or `snapshot` when the backend resumes a saved image. */
  readonly startupSource: 'cold' | 'snapshot' | 'pool';
  /** Boots a phone. Rejects with a PhoneBootError for a public startup failure. */
  boot(request: BootRequest): Promise<DevicePhone>;
  /** Stops every phone this backend started (server shutdown). */
  close(): Promise<void>;
}

/** A key the ADB gateway signs in to a phone's adbd with (server/adb-sign-in.ts). */
export interface AdbKey {
  /** Where it was read from (for logs; never the key itself). */
  readonly path: string;
  /** The AUTH(SIGNATURE) payload for an AUTH(TOKEN) challenge. */
  sign(token: Buffer): Buffer;
}

/** The keys to sign in with, read when a client connects. */
export type AdbKeyring = () => Promise<readonly AdbKey[]>;

/** Where a phone accepts ADB connections. */
export interface AdbEndpoint {
  host: string;
  port: number;
  /**
   * Present when the phone's adbd asks for a key (an emulator trusts only its adb_keys):
   * the gateway then signs in with these keys on behalf of its client (adb-sign-in.ts).
   */
  signIn?: AdbKeyring;
}

export interface DevicePhone {
  /** Display label in plain words, e.g. "Virtual Android phone (Pixel 8, Android 14)". */
  readonly label: string;
  readonly screen: ScreenSize;
  /**
   * How this phone started, when the backend knows it per boot (an emulator that was given a
   * snapshot may have cold-booted because the emulator refused it). Absent: the backend's
   * `startupSource`.
   */
  readonly startupSource?: 'cold' | 'snapshot';
  /**
   * Where the phone accepts ADB connections; the ADB gateway relays to it. A phone may open
   * its port only on the first call: most sessions never use ADB, and a listening socket per
   * phone is a large share of what a create costs.
   */
  adbEndpoint(): Promise<AdbEndpoint>;
  /**
   * Serves ADB on a connection the gateway accepted and unlocked, in this process: the same
   * ADB bytes as through adbEndpoint(), without a second TCP connection and a relay between
   * the two (what every message paid twice). `early` holds bytes the client sent after its
   * unlock line. Optional: phones in another process (emulators) are reached through
   * adbEndpoint(). Throws once the phone has begun to stop.
   */
  serveAdb?(socket: Socket, early: Buffer): void;
  /** PNG of the current screen. */
  capture(): Promise<Buffer>;
  /** Launcher apps, for the apps.list op. */
  apps(): Promise<AppSummary[]>;
  /** Taps, swipes, text and keys from the ops endpoints and the owner viewer. */
  input(event: PhoneInput): Promise<void>;
  /** Calls listener whenever what capture() returns may have changed. Returns unsubscribe. */
  onScreenChange(listener: () => void): () => void;
  /** Calls listener if the phone dies on its own (crash, killed process). */
  onLost(listener: (reason: string) => void): void;
  /**
   * Stops the phone and frees what it holds. With `saveTo`, first writes the phone's
   * state (apps, files, settings, current screen) into that empty directory, so a later
   * boot with `restoreFrom` set to it continues where this one stopped.
   */
  shutdown(options: { saveTo: string | null }): Promise<void>;
}

/** A startup failure whose message may be shown to the session's owner. */
export class PhoneBootError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'PhoneBootError';
  }
}
