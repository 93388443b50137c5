/**
 * The virtual phone's Chrome is a browser on the server: a DevTools client (Playwright, any
 * CDP tool, through adb forward) must not reach the server's files through it. file: URLs
 * are refused, a file input takes the phone's files, downloads stay in the browser's own
 * profile, and a context cannot leave the phone's network by a proxy of its own.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { _android, type AndroidDevice, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

const NOT_MODELED = "file: URLs are not modeled by the virtual phone's Chrome";

let v: VirtualAdb;
let device: AndroidDevice;
let context: BrowserContext;
/** A directory of the server's that no phone may write into. */
let serverDir: string;

beforeAll(async () => {
  serverDir = mkdtempSync(join(tmpdir(), 'phonelease-server-files-'));
  v = await startVirtualAdb();
  device = (await _android.devices({ port: v.adbServerPort })).find((d) => d.serial() === v.serial)!;
  await device.shell('am set-debug-app --persistent com.android.chrome');
  context = await device.launchBrowser();
});

afterAll(async () => {
  await context?.close();
  await device?.close();
  await v?.close();
  rmSync(serverDir, { recursive: true, force: true });
});

describe("the phone's Chrome keeps the server's files out of reach", () => {
  it('refuses file: URLs however they are written, and a page cannot navigate there either', async () => {
    const page = await context.newPage();
    for (const url of [
      'file:///etc/hostname',
      'FILE:///etc/hostname',
      '  fi\tle:///etc/hostname',
      'view-source:file:///etc/hostname',
    ]) {
      await expect(page.goto(url), url).rejects.toThrow(NOT_MODELED);
    }
    // A raw DevTools command too.
    const cdp = await context.newCDPSession(page);
    await expect(cdp.send('Target.createTarget', { url: 'file:///etc/hostname' })).rejects.toThrow(
      NOT_MODELED,
    );
    // A page's own navigation to a file: URL is Chromium's to refuse, and it does.
    await page.goto('about:blank');
    await page.evaluate(() => {
      location.href = 'file:///etc/hostname';
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(page.url()).not.toContain('file:');
    expect(await page.content()).not.toContain(readFileSync('/etc/hostname', 'utf8').trim());
    await page.close();
  });

  it('reads a command sent as a binary WebSocket message too', async () => {
    const socket = await browserTarget();
    const answer = new Promise<string>((resolve) =>
      socket.once('message', (data: Buffer) => resolve(data.toString())),
    );
    socket.send(
      Buffer.from(
        JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: 'file:///etc/hostname' } }),
      ),
      {
        binary: true,
      },
    );
    expect(JSON.parse(await answer)).toMatchObject({
      id: 1,
      error: { code: -32000, message: expect.stringContaining(NOT_MODELED) },
    });
    socket.close();
  });

  it('answers /json/new for a file: URL with 403 and opens nothing', async () => {
    const port = Number(
      (await v.adbOk(['forward', 'tcp:0', 'localabstract:' + (await socketName())])).trim(),
    );
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'PUT',
          path: `/json/new?${encodeURIComponent('file:///etc/hostname')}`,
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(403);
    expect(answer.body).toContain(NOT_MODELED);
    expect(context.pages().some((p) => p.url().startsWith('file:'))).toBe(false);
  });

  it("gives a file input the phone's files, and refuses a path the phone does not have", async () => {
    await v.adbOk(['shell', 'echo "from the phone" > /sdcard/Download/upload.txt']);
    const page = await context.newPage();
    await page.setContent('<input type="file" id="f">');
    const cdp = await context.newCDPSession(page);
    const { root } = await cdp.send('DOM.getDocument');
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#f' });
    await cdp.send('DOM.setFileInputFiles', { nodeId, files: ['/sdcard/Download/upload.txt'] });
    expect(
      await page.evaluate(async () => {
        const file = (document.getElementById('f') as HTMLInputElement).files![0]!;
        return [file.name, await file.text()];
      }),
    ).toEqual(['upload.txt', 'from the phone\n']);
    // A path of the server's is not the phone's.
    const serverFile = join(serverDir, 'secret.txt');
    await expect(cdp.send('DOM.setFileInputFiles', { nodeId, files: [serverFile] })).rejects.toThrow(
      `${serverFile}: No such file or directory. The paths are the phone's (adb push the file first)`,
    );
    await page.close();
  });

  it('keeps downloads on the phone, whatever directory the client names', async () => {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    const target = join(serverDir, 'downloads');
    await cdp.send('Browser.setDownloadBehavior', {
      behavior: 'allow',
      downloadPath: target,
      eventsEnabled: true,
    });
    const completed = new Promise<void>((resolve) =>
      cdp.on('Browser.downloadProgress', (event) => {
        if (event.state === 'completed') resolve();
      }),
    );
    await page.setContent('<a id="a" href="data:text/plain,downloaded" download="d.txt">get</a>');
    await page.click('#a');
    // The download happened, not where the client said: on the phone, as on Chrome for
    // Android, and again under Chrome's next free name.
    await completed;
    expect(existsSync(target)).toBe(false);
    await expect
      .poll(() => v.adb(['shell', 'cat /sdcard/Download/d.txt']).then((r) => r.stdout), { timeout: 10_000 })
      .toBe('downloaded');
    await page.click('#a');
    await expect
      .poll(() => v.adb(['shell', 'ls /sdcard/Download']).then((r) => r.stdout), { timeout: 10_000 })
      .toContain('d (1).txt');
    await page.close();
  });

  it('keeps downloads on the phone after a client that set their directory has gone', async () => {
    const socket = await browserTarget();
    const answered = new Promise((resolve) => socket.once('message', resolve));
    socket.send(
      JSON.stringify({
        id: 1,
        method: 'Browser.setDownloadBehavior',
        params: { behavior: 'allow', downloadPath: '/tmp' },
      }),
    );
    await answered;
    socket.close();
    await new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const page = await context.newPage();
    const name = `after-client-${process.pid}.txt`;
    await page.setContent(`<a id="a" href="data:text/plain,after" download="${name}">get</a>`);
    await page.click('#a');
    await expect
      .poll(() => v.adb(['shell', `cat /sdcard/Download/${name}`]).then((r) => r.stdout), { timeout: 10_000 })
      .toBe('after');
    expect(existsSync(join(homedir(), 'Downloads', name))).toBe(false);
    await page.close();
  });

  it("refuses a browser context with its own proxy: the phone's network is the way out", async () => {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await expect(cdp.send('Target.createBrowserContext', { proxyServer: 'direct://' })).rejects.toThrow(
      "a browser context's own proxy is not modeled by the virtual phone's Chrome",
    );
    await page.close();
  });
});

describe('the DevTools socket reads HTTP and WebSocket strictly, as the browser would', () => {
  /** The raw bytes the DevTools socket answers to `request`, until it closes or goes quiet. */
  async function raw(request: Buffer | string, settleMs = 1_500): Promise<string> {
    const port = Number(
      (await v.adbOk(['forward', 'tcp:0', 'localabstract:' + (await socketName())])).trim(),
    );
    const socket = connect({ host: '127.0.0.1', port });
    let out = '';
    socket.on('data', (c: Buffer) => (out += c.toString('latin1')));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(request);
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, settleMs);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
    });
    socket.destroy();
    return out;
  }

  /** A masked client frame (key 0: the bytes read as they are). */
  function frame(opcode: number, text: string, fin = true): Buffer {
    const body = Buffer.from(text);
    return Buffer.concat([
      Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 126, body.length >> 8, body.length & 255, 0, 0, 0, 0]),
      body,
    ]);
  }

  const createFileTarget = JSON.stringify({
    id: 7,
    method: 'Target.createTarget',
    params: { url: 'file:///etc/hostname' },
  });
  const upgrade = (extra: string) =>
    `GET /devtools/browser HTTP/1.1\r\nHost: 127.0.0.1\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`;

  /** No tab shows a file: URL, by the browser's own list. */
  async function noFileTab(): Promise<void> {
    const list = await raw('GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(list).toContain('200 OK');
    expect(list).not.toContain('file://');
  }

  it('refuses /json/new for a file: URL however the path and the URL are written', async () => {
    for (const target of [
      '/json/new?file:///etc/hostname',
      '/json/new/x?file:///etc/hostname',
      '/json/new/?file:///etc/hostname',
      '/json/new#?file:///etc/hostname',
      '/json/new?file%3A%2F%2F%2Fetc%2Fhostname%23%',
    ])
      expect(await raw(`PUT ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`), target).toMatch(
        /^HTTP\/1\.1 403 Forbidden/,
      );
    await noFileTab();
  });

  it('refuses a head with a bare LF or CR, and reads every request on a connection as strictly', async () => {
    expect(
      await raw(
        'GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: b\n\r\nPUT /json/new?file:///etc/hostname HTTP/1.1\r\n\r\n',
      ),
    ).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    // An upgrade without Connection: Upgrade is a plain request, and the next request on the
    // connection is read as strictly as the first (a keep-alive client sends several).
    const answer = await raw(
      'GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\nGET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    );
    expect(answer.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
    const smuggled = await raw(
      'GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\nPUT /json/new?file:///etc/hostname HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    );
    expect(smuggled).not.toContain('file://');
    await noFileTab();
  });

  it('reads an upgrade by its tokens, and closes on frames RFC 6455 calls errors', async () => {
    // `Upgrade: x, websocket` upgrades for Chromium, so the guard reads what follows.
    const listed = await raw(
      Buffer.concat([
        Buffer.from(upgrade('Upgrade: x, websocket\r\nConnection: keep-alive, Upgrade\r\n')),
        frame(1, createFileTarget),
      ]),
    );
    expect(listed).toMatch(/^HTTP\/1\.1 101/);
    expect(listed).toContain("file: URLs are not modeled by the virtual phone's Chrome");
    // A continuation that continues nothing, and a frame with the compression bit, end the connection unanswered.
    for (const bad of [
      frame(0, createFileTarget),
      Buffer.concat([Buffer.from([0xc1]), frame(1, createFileTarget).subarray(1)]),
    ]) {
      const answer = await raw(
        Buffer.concat([Buffer.from(upgrade('Upgrade: websocket\r\nConnection: Upgrade\r\n')), bad]),
      );
      expect(answer).toMatch(/^HTTP\/1\.1 101/);
      expect(answer).not.toContain('"id":7');
    }
    await noFileTab();
  });
});

describe("intents to the phone's Chrome", () => {
  it('open web pages only, and an intent never reaches the browser as a switch', async () => {
    const marker = join(serverDir, 'ran');
    await v.adbOk(['shell', 'am force-stop com.android.chrome']);
    for (const data of [`--renderer-cmd-prefix=/bin/sh -c :>${marker}`, 'file:///etc/hostname'])
      await v.adbOk([
        'shell',
        `am start -W -a android.intent.action.VIEW -d '${data}' -n com.android.chrome/com.google.android.apps.chrome.Main`,
      ]);
    await expect
      .poll(() => v.adbOk(['shell', 'logcat -d -s chromium']), { timeout: 10_000 })
      .toContain(
        "cannot open file:///etc/hostname: only web pages are modeled by the virtual phone's Chrome",
      );
    expect(existsSync(marker)).toBe(false);
    await noFileTabs();
  });
});

async function noFileTabs(): Promise<void> {
  const port = Number((await v.adbOk(['forward', 'tcp:0', 'localabstract:chrome_devtools_remote'])).trim());
  const list = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/json/list' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  expect(list).not.toContain('file://');
}

/** A raw DevTools client of the browser target, through adb forward, as any tool connects. */
async function browserTarget(): Promise<WebSocket> {
  const port = Number((await v.adbOk(['forward', 'tcp:0', 'localabstract:' + (await socketName())])).trim());
  const socket = new WebSocket(`ws://127.0.0.1:${port}/devtools/browser`);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return socket;
}

/** The DevTools socket Chrome listens on now (the name launchBrowser gave it). */
async function socketName(): Promise<string> {
  const unix = await v.adbOk(['shell', 'cat /proc/net/unix']);
  return /@(\S*devtools_remote)/.exec(unix)![1]!;
}
