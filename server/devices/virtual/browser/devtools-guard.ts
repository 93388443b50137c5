/**
 * What a DevTools client may ask of the phone's Chrome. The browser behind it runs on the
 * server, so the DevTools commands that would reach the server's own files are kept on the
 * phone, as they are on a real one:
 *
 * - A `file:` URL (Page.navigate, Target.createTarget, Network.loadNetworkResource, the
 *   HTTP `/json/new`) would show the server's files: refused, as not modeled.
 * - DOM.setFileInputFiles names files on the phone, as Chrome for Android reads them: each
 *   is read from the phone (as Chrome's app may) and handed to the browser as a copy. A path
 *   the phone does not have is refused, saying so.
 * - A download directory (Browser/Page.setDownloadBehavior) is the browser's own, inside its
 *   profile, from where each finished download goes to the phone's Download folder.
 * - A browser context's own proxy (Target.createBrowserContext) would leave the phone's
 *   network: refused, as not modeled.
 * - Files dropped on a page (Input.dispatchDragEvent) are the phone's, as a file input's are;
 *   an intercepted request may not be sent on to a `file:` URL; and a page may not be given
 *   DevTools of its own (Target.exposeDevToolsProtocol), whose commands no guard would read.
 * - A command inside Target.sendMessageToTarget is guarded as the command it is.
 */
import { basename } from 'node:path';

/** What the guard needs of the phone and of its browser. */
export interface GuardHost {
  /** A file on the phone as Chrome's app reads it, or why not (a missing file, no access). */
  readPhoneFile(path: string): Buffer | { error: string };
  /** Hands a copy of a phone's file to the browser: its path on the server. */
  stageFile(name: string, data: Buffer): string;
  /** The browser's own download directory, on the server. */
  downloadDir(): string;
}

/** What becomes of a command: sent as it is, sent changed, or answered with an error. */
export type Verdict =
  { kind: 'pass' } | { kind: 'rewrite'; message: string } | { kind: 'refuse'; error: string };

export const NOT_MODELED_FILE_URL =
  "file: URLs are not modeled by the virtual phone's Chrome: its browser runs on the server, whose files it must not show";

/** The command names worth a look: anything else passes without being parsed. */
const GUARDED = [
  'Page.navigate',
  'Target.createTarget',
  'Network.loadNetworkResource',
  'DOM.setFileInputFiles',
  'setDownloadBehavior',
  'Target.createBrowserContext',
  'Target.sendMessageToTarget',
  'Target.exposeDevToolsProtocol',
  'Input.dispatchDragEvent',
  'continueRequest',
  'continueInterceptedRequest',
];

/** A URL the phone's Chrome opens from outside a page (an intent, a new tab): a web page. */
export function isWebPage(url: string): boolean {
  return /^(https?|about|data):/i.test(url.trim());
}

/**
 * Whether a URL would load a file of the server: `file:`, and `view-source:` or
 * `filesystem:` of one, as a URL parser reads it (tabs and newlines anywhere and spaces and
 * control characters around it do not count; the scheme's case does not matter).
 */
export function isFileUrl(url: unknown): boolean {
  if (typeof url !== 'string') return false;
  let rest = url.replace(/[\t\n\r]/g, '').toLowerCase();
  for (;;) {
    // The URL parser drops C0 controls and spaces around a URL.
    // eslint-disable-next-line no-control-regex
    rest = rest.replace(/^[\u0000-\u0020]+/, '');
    const wrapper = /^(view-source|filesystem):/.exec(rest);
    if (!wrapper) return rest.startsWith('file:');
    rest = rest.slice(wrapper[0].length);
  }
}

/**
 * Decides one client message (its JSON text). A message that names none of the guarded
 * commands (and escapes nothing, which could spell one) passes as it is; any other is sent
 * as the guard read it, so the browser sees exactly what was checked (a key given twice, or
 * an escaped name, cannot read differently there).
 */
export function guardCommand(text: string, host: GuardHost): Verdict {
  if (!text.includes('\\u') && !GUARDED.some((name) => text.includes(name))) return { kind: 'pass' };
  let message: { id?: unknown; method?: unknown; params?: Record<string, unknown> };
  try {
    message = JSON.parse(text) as typeof message;
    if (typeof message !== 'object' || message === null) throw new Error('not an object');
  } catch {
    return { kind: 'refuse', error: 'Message must be a valid JSON' };
  }
  const params = message.params ?? {};
  const send = (changed: Record<string, unknown> | null): Verdict => ({
    kind: 'rewrite',
    message: JSON.stringify(changed ? { ...message, params: { ...params, ...changed } } : message),
  });
  switch (message.method) {
    case 'Page.navigate':
    case 'Target.createTarget':
    case 'Network.loadNetworkResource':
      return isFileUrl(params.url) ? { kind: 'refuse', error: NOT_MODELED_FILE_URL } : send(null);
    case 'Fetch.continueRequest':
    case 'Network.continueInterceptedRequest':
      // An intercepted request sent on to another URL.
      return isFileUrl(params.url) ? { kind: 'refuse', error: NOT_MODELED_FILE_URL } : send(null);
    case 'DOM.setFileInputFiles': {
      const staged = phoneFiles(params.files, host);
      return 'error' in staged ? { kind: 'refuse', error: staged.error } : send({ files: staged.files });
    }
    case 'Input.dispatchDragEvent': {
      // Files dropped on the page, by path: the phone's, as a file input's are.
      const data = params.data as { files?: unknown } | undefined;
      if (!data || data.files === undefined) return send(null);
      const staged = phoneFiles(data.files, host);
      return 'error' in staged
        ? { kind: 'refuse', error: staged.error }
        : send({ data: { ...data, files: staged.files } });
    }
    case 'Target.exposeDevToolsProtocol':
      // A page given DevTools of its own would send commands no guard reads.
      return {
        kind: 'refuse',
        error: "exposing DevTools to a page is not modeled by the virtual phone's Chrome",
      };
    case 'Browser.setDownloadBehavior':
    case 'Page.setDownloadBehavior':
      // Chrome for Android keeps downloads on the phone: whatever directory is named, they go
      // to the browser's own and from there to the phone's Download folder, under the name
      // the page gave (`allowAndName` would name them by their id).
      return params.behavior === 'deny'
        ? send(null)
        : send({ behavior: 'allow', downloadPath: host.downloadDir() });
    case 'Target.sendMessageToTarget': {
      // The old way to reach a target's session: a whole command inside a string, which is
      // guarded as the command it is.
      if (typeof params.message !== 'string') return send(null);
      const inner = guardCommand(params.message, host);
      if (inner.kind === 'refuse') return inner;
      return send(inner.kind === 'rewrite' ? { message: inner.message } : null);
    }
    case 'Target.createBrowserContext':
      return params.proxyServer === undefined && params.proxyBypassList === undefined
        ? send(null)
        : {
            kind: 'refuse',
            error:
              "a browser context's own proxy is not modeled by the virtual phone's Chrome: its connections go through the phone's network",
          };
    default:
      return send(null);
  }
}

/**
 * Files named by path, read on the phone (as Chrome's app may) and handed to the browser as
 * copies; a path the phone does not have is refused with what to do.
 */
function phoneFiles(files: unknown, host: GuardHost): { files: unknown[] } | { error: string } {
  const list = Array.isArray(files) ? (files as unknown[]) : [];
  const staged: unknown[] = [];
  for (const path of list) {
    // Not a path: Chrome refuses it itself.
    if (typeof path !== 'string') return { files: list };
    const read = host.readPhoneFile(path);
    if ('error' in read)
      return {
        error: `${path}: ${read.error}. The paths are the phone's (adb push the file first), or set the file's contents instead (Playwright: setInputFiles({ name, mimeType, buffer }))`,
      };
    staged.push(host.stageFile(basename(path), read));
  }
  return { files: staged };
}

/**
 * The error answer to a refused command, as Chrome's DevTools answer one (in its session);
 * a message that is no JSON gets the parse error, with no id.
 */
export function errorAnswer(text: string, error: string): string {
  let parsed: { id?: unknown; sessionId?: unknown } = {};
  try {
    parsed = (JSON.parse(text) as typeof parsed | null) ?? {};
  } catch {
    return JSON.stringify({ error: { code: -32700, message: error } });
  }
  return JSON.stringify({
    ...(typeof parsed.id === 'number' ? { id: parsed.id } : {}),
    error: { code: -32000, message: error },
    ...(typeof parsed.sessionId === 'string' ? { sessionId: parsed.sessionId } : {}),
  });
}
