/**
 * Several host connections to one emulator's adb port. The server drives its emulators
 * through the adb server (readiness checks, screenshots, input: `adb -s emulator-N`), which
 * holds one connection to the emulator's adb port for as long as the emulator runs; the ADB
 * gateway opens one more per client. Current emulator builds serve them all: the guest's
 * adbd opens a new pipe as soon as one is connected and the emulator keeps listening
 * (QEMU `AdbGuestPipe.cpp`, "How multiple active pipes are supported"). Older builds stopped
 * listening while one connection was active and listened again only once it closed, so a
 * second connection was refused. The first emulator version that serves several is not
 * documented (the change is not in the emulator's release notes), so instead of naming one,
 * the backend checks each emulator build it runs, once, on its first phone: with the adb
 * server connected, a connection to the adb port is accepted or refused at once.
 */
import net from 'node:net';

/** What `phonelease doctor` and the server's log say about it. */
export const SEVERAL_CONNECTIONS_NEEDED =
  'ADB through the gateway needs an emulator that serves several connections on its adb port at once (the adb server holds one). Current builds do; builds that stop listening while one connection is active cannot give gateway clients the phone.';

export const ONE_CONNECTION_FIX = 'sdkmanager --install "emulator"  # a current emulator build';

/**
 * Whether the emulator on `adbPort` accepts a connection beside the adb server's: true when
 * it does, false when it refuses. A connection it accepts is closed at once (the guest's
 * adbd sees a host come and go, and opens its next pipe).
 */
export function acceptsAnotherAdbConnection(adbPort: number, timeoutMs = 5_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(adbPort, '127.0.0.1');
    const done = (accepted: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(accepted);
    };
    // Nothing answers a connect that hangs: count it as not served.
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
