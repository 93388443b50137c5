/**
 * The phone's DevTools socket (`chrome_devtools_remote`) relayed to Chromium's DevTools port,
 * declining WebSocket compression on the way.
 *
 * Playwright's connectOverCDP offers permessage-deflate and Chromium accepts it, so every
 * message was deflated by the phone's Chromium and inflated by the test's process: on a
 * machine where the test, the server and Chromium share the CPU, zlib was the largest single
 * cost of each action on the phone's page (bench/mobile-web.ts, profiled), for bytes that
 * cross loopback and an ADB stream. The relay drops `Sec-WebSocket-Extensions` from the
 * connection's first request, so Chromium answers the upgrade without an extension and both
 * sides send plain frames, as the WebSocket protocol lets any server do.
 *
 * Chrome for Android's browser target is `/devtools/browser` (its browser target is
 * discoverable, so the path carries no id), where the desktop Chromium behind the phone
 * serves `/devtools/browser/<id>`: the relay points the first at the second. Playwright's
 * Android support connects there.
 */
import type { Duplex } from 'node:stream';
import { relay } from '../../../../src/util/relay.js';

/** A request head larger than this is relayed as it is (no DevTools request comes close). */
const MAX_HEAD = 16 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

/** The browser target's path on Chrome for Android. */
const ANDROID_BROWSER_PATH = '/devtools/browser';

/** `browserPath`: the browser target's path on the Chromium behind the phone. */
export function relayDevTools(client: Duplex, devtools: Duplex, browserPath: string): void {
  let head: Buffer = Buffer.alloc(0);
  const fail = () => {
    client.destroy();
    devtools.destroy();
  };
  client.on('error', fail);
  devtools.on('error', fail);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const end = head.indexOf(HEAD_END);
    if (end < 0 && head.length <= MAX_HEAD) return;
    client.off('data', onData);
    client.pause();
    if (end < 0) {
      devtools.write(head);
    } else {
      const lines = head
        .subarray(0, end)
        .toString('latin1')
        .split('\r\n')
        .filter((line) => !/^sec-websocket-extensions\s*:/i.test(line));
      const [method, target, version] = lines[0]!.split(' ');
      if (target === ANDROID_BROWSER_PATH) lines[0] = `${method} ${browserPath} ${version}`;
      devtools.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
      const rest = head.subarray(end + HEAD_END.length);
      if (rest.length > 0) devtools.write(rest);
    }
    client.off('error', fail);
    devtools.off('error', fail);
    relay(client, devtools);
  };
  client.on('data', onData);
  // The client left before it sent a whole request.
  client.once('end', () => {
    if (client.listeners('data').includes(onData)) fail();
  });
}
