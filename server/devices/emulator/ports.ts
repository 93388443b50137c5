/**
 * Console/adb port pairs. The adb server finds emulators by itself only on adb ports
 * 5555-5585 (reference, "How the adb server finds an emulator"), so console ports stay in
 * 5554-5584: 16 pairs. Every emulator gets an explicit `-port`; another program can still
 * take a port between the check and the emulator's bind, which the emulator reports as
 * "too many emulator instances" and the backend answers by trying the next pair.
 */
import net from 'node:net';
import { PhoneBootError } from '../types.js';

export const FIRST_CONSOLE_PORT = 5554;
export const LAST_CONSOLE_PORT = 5584;
export const PORT_PAIRS = (LAST_CONSOLE_PORT - FIRST_CONSOLE_PORT) / 2 + 1;

export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** Console ports whose pair is free on this machine right now (for the doctor). */
export async function freePairs(): Promise<number[]> {
  const free: number[] = [];
  for (let p = FIRST_CONSOLE_PORT; p <= LAST_CONSOLE_PORT; p += 2) {
    if ((await portFree(p)) && (await portFree(p + 1))) free.push(p);
  }
  return free;
}

export function portsExhausted(): PhoneBootError {
  return new PhoneBootError(
    'emulator_ports_exhausted',
    `Every emulator port pair the adb server can find (consoles ${FIRST_CONSOLE_PORT}-${LAST_CONSOLE_PORT}, ${PORT_PAIRS} emulators) is in use. End other emulators (\`adb devices\` lists them; \`adb -s emulator-N emu kill\` stops one) or lower --phones, then retry.`,
  );
}

/** Hands out console ports to this backend's emulators, never the same one twice at once. */
export class PortPool {
  private readonly held = new Set<number>();

  /** A free console port (its adb port is the next one), skipping `tried`. */
  async acquire(tried: ReadonlySet<number> = new Set()): Promise<number> {
    for (let p = FIRST_CONSOLE_PORT; p <= LAST_CONSOLE_PORT; p += 2) {
      if (this.held.has(p) || tried.has(p)) continue;
      this.held.add(p); // before the async check, so a concurrent acquire skips it
      if ((await portFree(p)) && (await portFree(p + 1))) return p;
      this.held.delete(p);
    }
    throw portsExhausted();
  }

  release(port: number): void {
    this.held.delete(port);
  }
}
