/**
 * The DevTools relay's parts on their own: WebSocket frames read across any split, and the
 * guard's verdict on each command, including ones written to slip past a string match.
 */
import { describe, expect, it } from 'vitest';
import {
  errorAnswer,
  guardCommand,
  isFileUrl,
  type GuardHost,
} from '../../server/devices/virtual/browser/devtools-guard.js';
import { chromiumArgs } from '../../server/devices/virtual/browser/chromium.js';
import {
  FrameBoundaries,
  MessageReader,
  OPCODE_TEXT,
  encodeFrame,
} from '../../server/devices/virtual/browser/websocket-frames.js';

const PING = 0x9;

/** A text message split into fragments, masked as a client sends it. */
function fragmented(text: string, parts: number): Buffer {
  const bytes = Buffer.from(text);
  const size = Math.ceil(bytes.length / parts);
  const frames: Buffer[] = [];
  for (let i = 0; i < parts; i++) {
    const frame = encodeFrame(i === 0 ? OPCODE_TEXT : 0, bytes.subarray(i * size, (i + 1) * size), true);
    if (i < parts - 1) frame[0]! &= 0x7f; // not the last: FIN off
    frames.push(frame);
  }
  return Buffer.concat(frames);
}

describe('chromiumArgs', () => {
  it("ends the switches before the first page, so an intent's data is never read as one", () => {
    const args = chromiumArgs(
      {
        executable: 'chromium',
        cssWidth: 360,
        cssHeight: 640,
        scale: 2,
        userAgent: 'UA',
        proxyPort: 1,
        url: '--renderer-cmd-prefix=x',
      },
      '/profile',
    );
    expect(args.slice(-2)).toEqual(['--', '--renderer-cmd-prefix=x']);
    expect(args).toContain('--force-webrtc-ip-handling-policy=disable_non_proxied_udp');
  });
});

describe('MessageReader', () => {
  it('reads masked messages of every length form, one byte at a time', () => {
    const texts = ['a', 'b'.repeat(200), 'c'.repeat(70_000)];
    const stream = Buffer.concat(texts.map((t) => encodeFrame(OPCODE_TEXT, Buffer.from(t), true)));
    const reader = new MessageReader();
    const got: string[] = [];
    for (let i = 0; i < stream.length; i += 1 + (i % 7))
      for (const m of reader.push(stream.subarray(i, i + 1 + (i % 7)))) got.push(m.payload.toString());
    expect(got).toEqual(texts);
  });

  it('refuses what RFC 6455 calls a protocol error instead of passing it on', () => {
    const text = encodeFrame(OPCODE_TEXT, Buffer.from('{}'), true);
    const lone = encodeFrame(0, Buffer.from('{}'), true);
    const rsv = Buffer.from(text);
    rsv[0]! |= 0x40;
    const reserved = Buffer.from(text);
    reserved[0] = 0x83;
    const unmasked = encodeFrame(OPCODE_TEXT, Buffer.from('{}'), false);
    for (const [bytes, error] of [
      [lone, 'WebSocket continuation out of place'],
      [rsv, 'WebSocket frame with reserved bits set'],
      [reserved, 'WebSocket frame with reserved opcode 3'],
      [unmasked, 'unmasked WebSocket frame from a client'],
    ] as const)
      expect(() => new MessageReader().push(bytes), error).toThrow(error);
  });

  it('puts a fragmented message together, passing a control frame between its fragments at once', () => {
    const text = '{"id":1,"method":"Page.navigate"}';
    const message = fragmented(text, 3);
    const ping = encodeFrame(PING, Buffer.from('hi'), true);
    // The ping goes in after the first fragment.
    const firstEnd = 2 + 4 + Math.ceil(text.length / 3);
    const stream = Buffer.concat([message.subarray(0, firstEnd), ping, message.subarray(firstEnd)]);
    const out = new MessageReader().push(stream);
    expect(out.map((m) => [m.opcode, m.payload.toString()])).toEqual([
      [PING, 'hi'],
      [OPCODE_TEXT, text],
    ]);
    // The message's bytes are its frames' bytes, as they came.
    expect(Buffer.compare(out[1]!.raw, message)).toBe(0);
  });
});

describe('FrameBoundaries', () => {
  it('tells when the stream is between two messages, across any split of headers and payloads', () => {
    const a = encodeFrame(OPCODE_TEXT, Buffer.from('x'.repeat(300)), false);
    const b = encodeFrame(OPCODE_TEXT, Buffer.from('y'.repeat(70_000)), false);
    const stream = Buffer.concat([a, b]);
    for (const step of [1, 3, 13, 301, 4096]) {
      const frames = new FrameBoundaries();
      const boundaries: number[] = [];
      for (let i = 0; i < stream.length; i += step) {
        frames.push(stream.subarray(i, i + step));
        if (frames.atMessageBoundary) boundaries.push(Math.min(i + step, stream.length));
      }
      // Only where a frame ends: after a, and at the end.
      expect(
        boundaries.every((at) => at === a.length || at === stream.length),
        `step ${step}`,
      ).toBe(true);
      expect(boundaries.at(-1)).toBe(stream.length);
    }
  });

  it('is not at a boundary between the fragments of one message', () => {
    const frames = new FrameBoundaries();
    const first = encodeFrame(OPCODE_TEXT, Buffer.from('part'), false);
    first[0]! &= 0x7f;
    frames.push(first);
    expect(frames.atMessageBoundary).toBe(false);
    frames.push(encodeFrame(0, Buffer.from('end'), false));
    expect(frames.atMessageBoundary).toBe(true);
  });
});

describe('guardCommand', () => {
  const staged: [string, string][] = [];
  const host: GuardHost = {
    readPhoneFile: (path) =>
      path === '/sdcard/Download/a.txt' ? Buffer.from('phone file') : { error: 'No such file or directory' },
    stageFile: (name, data) => {
      staged.push([name, data.toString()]);
      return `/profile/phone-files/${staged.length}/${name}`;
    },
    downloadDir: () => '/profile/Download',
  };

  it('recognises file: URLs as a URL parser reads them', () => {
    for (const url of [
      'file:///etc/passwd',
      'FILE:/etc/passwd',
      ' \u0001file:///x',
      'fi\nle:///x',
      'view-source:file:///x',
      'view-source: filesystem:file:///x',
    ])
      expect(isFileUrl(url), JSON.stringify(url)).toBe(true);
    for (const url of ['https://example.com/file:///x', 'about:blank', 'data:text/html,file:', 42])
      expect(isFileUrl(url), JSON.stringify(url)).toBe(false);
  });

  it('passes a command it has no rule for as it is, without parsing it', () => {
    expect(guardCommand('{"id":1,"method":"Runtime.evaluate","params":{"expression":"1"}}', host)).toEqual({
      kind: 'pass',
    });
  });

  it('refuses a file: navigation written to slip past a string match, and sends what it read', () => {
    // An escaped method name, and the method given twice (JSON.parse keeps the last).
    for (const text of [
      '{"id":2,"method":"Page.navig\\u0061te","params":{"url":"file:///etc/passwd"}}',
      '{"id":2,"method":"Runtime.enable","method":"Page.navigate","params":{"url":"file:///etc/passwd"}}',
    ])
      expect(guardCommand(text, host), text).toMatchObject({ kind: 'refuse' });
    const other = guardCommand(
      '{"id":3,"method":"Page.navigate","params":{"url":"https://example.com"},"method":"Page.navigate"}',
      host,
    );
    expect(other).toEqual({
      kind: 'rewrite',
      message: '{"id":3,"method":"Page.navigate","params":{"url":"https://example.com"}}',
    });
    // A message that is no JSON is answered as Chrome answers one.
    expect(guardCommand('{"method":"Page.navigate",', host)).toEqual({
      kind: 'refuse',
      error: 'Message must be a valid JSON',
    });
    expect(JSON.parse(errorAnswer('{"method":', 'Message must be a valid JSON'))).toEqual({
      error: { code: -32700, message: 'Message must be a valid JSON' },
    });
  });

  it("hands a file input copies of the phone's files, and refuses a path the phone lacks", () => {
    expect(
      guardCommand(
        '{"id":4,"method":"DOM.setFileInputFiles","params":{"files":["/sdcard/Download/a.txt"],"nodeId":7}}',
        host,
      ),
    ).toEqual({
      kind: 'rewrite',
      message:
        '{"id":4,"method":"DOM.setFileInputFiles","params":{"files":["/profile/phone-files/1/a.txt"],"nodeId":7}}',
    });
    expect(staged).toEqual([['a.txt', 'phone file']]);
    const refused = guardCommand(
      '{"id":5,"method":"DOM.setFileInputFiles","params":{"files":["/home/me/a.txt"]}}',
      host,
    );
    expect(refused).toMatchObject({ kind: 'refuse' });
    expect(JSON.parse(errorAnswer('{"id":5,"sessionId":"S"}', (refused as { error: string }).error))).toEqual(
      {
        id: 5,
        sessionId: 'S',
        error: {
          code: -32000,
          message:
            "/home/me/a.txt: No such file or directory. The paths are the phone's (adb push the file first), or set the file's contents instead (Playwright: setInputFiles({ name, mimeType, buffer }))",
        },
      },
    );
  });

  it('names downloads as the page does, and keeps a refusal of downloads as it is', () => {
    expect(
      guardCommand(
        '{"id":7,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","downloadPath":"/tmp/x","eventsEnabled":true}}',
        host,
      ),
    ).toEqual({
      kind: 'rewrite',
      message:
        '{"id":7,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/profile/Download","eventsEnabled":true}}',
    });
    expect(
      guardCommand('{"id":8,"method":"Browser.setDownloadBehavior","params":{"behavior":"deny"}}', host),
    ).toEqual({
      kind: 'rewrite',
      message: '{"id":8,"method":"Browser.setDownloadBehavior","params":{"behavior":"deny"}}',
    });
  });

  it('guards a command sent inside Target.sendMessageToTarget as the command it is', () => {
    const inner = JSON.stringify({ id: 1, method: 'Page.navigate', params: { url: 'file:///etc/passwd' } });
    expect(
      guardCommand(
        JSON.stringify({
          id: 9,
          method: 'Target.sendMessageToTarget',
          params: { message: inner, sessionId: 'S' },
        }),
        host,
      ),
    ).toMatchObject({ kind: 'refuse' });
    // Nested twice, escaped inside the string.
    const twice = JSON.stringify({
      id: 2,
      method: 'Target.sendMessageToTarget',
      params: { message: inner.replace('navigate', 'navig\\u0061te') },
    });
    expect(
      guardCommand(
        JSON.stringify({ id: 10, method: 'Target.sendMessageToTarget', params: { message: twice } }),
        host,
      ),
    ).toMatchObject({
      kind: 'refuse',
    });
    const download = JSON.stringify({
      id: 3,
      method: 'Page.setDownloadBehavior',
      params: { behavior: 'allow', downloadPath: '/etc' },
    });
    const sent = guardCommand(
      JSON.stringify({ id: 11, method: 'Target.sendMessageToTarget', params: { message: download } }),
      host,
    );
    expect(sent.kind).toBe('rewrite');
    const message = (JSON.parse((sent as { message: string }).message) as { params: { message: string } })
      .params.message;
    expect(JSON.parse(message)).toMatchObject({ params: { downloadPath: '/profile/Download' } });
  });

  it('reads dropped files on the phone, keeps intercepted requests off file:, and gives no page DevTools of its own', () => {
    const drop = guardCommand(
      '{"id":12,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":2,"data":{"items":[],"files":["/sdcard/Download/a.txt"],"dragOperationsMask":1}}}',
      host,
    );
    expect(drop.kind).toBe('rewrite');
    expect(JSON.parse((drop as { message: string }).message)).toMatchObject({
      params: { data: { files: [expect.stringMatching(/^\/profile\/phone-files\/\d+\/a\.txt$/)] } },
    });
    expect(
      guardCommand(
        '{"id":13,"method":"Input.dispatchDragEvent","params":{"type":"drop","data":{"files":["/etc/hostname"]}}}',
        host,
      ),
    ).toMatchObject({ kind: 'refuse' });
    expect(
      guardCommand(
        '{"id":14,"method":"Fetch.continueRequest","params":{"requestId":"r","url":"file:///etc/hostname"}}',
        host,
      ),
    ).toMatchObject({ kind: 'refuse' });
    expect(
      guardCommand('{"id":15,"method":"Target.exposeDevToolsProtocol","params":{"targetId":"T"}}', host),
    ).toEqual({
      kind: 'refuse',
      error: "exposing DevTools to a page is not modeled by the virtual phone's Chrome",
    });
  });

  it("points downloads at the browser's own directory", () => {
    expect(
      guardCommand(
        '{"id":6,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/etc"}}',
        host,
      ),
    ).toEqual({
      kind: 'rewrite',
      message:
        '{"id":6,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/profile/Download"}}',
    });
  });
});
