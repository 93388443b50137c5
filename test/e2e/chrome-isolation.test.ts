/**
 * The virtual phone's Chrome is a browser on the server: a DevTools client (Playwright, any
 * CDP tool, through adb forward) must not reach the server's files through it. file: URLs
 * are refused, a file input takes the phone's files, downloads stay in the browser's own
 * profile, and a context cannot leave the phone's network by a proxy of its own.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
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
    const port = Number(
      (await v.adbOk(['forward', 'tcp:0', 'localabstract:' + (await socketName())])).trim(),
    );
    const socket = new WebSocket(`ws://127.0.0.1:${port}/devtools/browser`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
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

  it("refuses a browser context with its own proxy: the phone's network is the way out", async () => {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await expect(cdp.send('Target.createBrowserContext', { proxyServer: 'direct://' })).rejects.toThrow(
      "a browser context's own proxy is not modeled by the virtual phone's Chrome",
    );
    await page.close();
  });
});

/** The DevTools socket Chrome listens on now (the name launchBrowser gave it). */
async function socketName(): Promise<string> {
  const unix = await v.adbOk(['shell', 'cat /proc/net/unix']);
  return /@(\S*devtools_remote)/.exec(unix)![1]!;
}
