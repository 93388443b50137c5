/**
 * Ports for a server that is started later (a private adb server, which the adb client
 * starts itself after finding nobody there) and for addresses where nothing may listen.
 *
 * Such a port must lie outside the kernel's ephemeral range. A connection to a port in that
 * range with nobody listening can be given that same port as its source, and then it
 * connects to itself (TCP simultaneous open): adb's client once read back its own request
 * here (`protocol fault (status 30 30 30 63?!)`: "000c" of "000chost:version") instead of
 * starting its server. The port is checked free at the time; below the ephemeral range only
 * an explicit bind takes it, so picking at random among ~20,000 keeps tests apart.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The lowest port the kernel hands out for bind(0) and outgoing connections: Linux says
 * where; elsewhere 32768, Linux's default, below IANA's 49152 as well.
 */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch {
    // not Linux
  }
  return 32_768;
}

const FLOOR = 10_000;
const CEILING = ephemeralFloor();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port on 127.0.0.1 that no connection is given as its source (see the file's comment). */
export async function quietPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = FLOOR + Math.floor(Math.random() * (CEILING - FLOOR));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${FLOOR} and ${CEILING} after 100 tries`);
}
