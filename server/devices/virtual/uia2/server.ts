/**
 * The phone's UiAutomator2 server: the HTTP API that appium-uiautomator2-driver proxies to
 * on device port 6790, answered from the phone's view tree. The system side hands every
 * connection to that port to handleConnection(); node:http parses HTTP/1.1 on it (any
 * Duplex works, not only sockets) and keeps it alive between commands.
 *
 * Replies follow the W3C shape the driver expects: `{sessionId, value}`, errors as
 * `{value: {error, message, stacktrace}}` with the W3C status code.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PNG } from 'pngjs';
import { compressedTree, formatBounds } from '../ui/hierarchy.js';
import type { DeviceIdentity, PhoneUi, Rotation, UiAutomator2Server, UiNodeInfo } from '../ui/types.js';
import {
  KEYCODE,
  LONG_PRESS_MS,
  PLAIN_VIEW,
  SYSTEM_LONG_PRESS,
  keycodeChar,
  repeatsWhenHeld,
} from '../ui/types.js';
import { buildSource, serializeSource } from './source.js';
import {
  matchSelector,
  parseUiSelector,
  UiSelectorError,
  UiSelectorPatternError,
  type Selector,
  type Statement,
} from './ui-selector.js';
import { selectElements, XPathError } from './xpath.js';
import { BROWSER_PACKAGE_NAME } from '../ui/screens/browser.js';
import { listWindows, PHYSICAL_DISPLAY_ID, type WindowScene } from './windows.js';

export interface UiAutomator2ServerInfo {
  identity: DeviceIdentity;
  /**
   * Optional logcat sink (priority, tag, message). Unknown routes and failures are logged
   * here with tag AppiumUiAutomator2Server so missing routes show in `adb logcat`.
   */
  log?: (priority: 'V' | 'D' | 'I' | 'W' | 'E', tag: string, message: string) => void;
  /**
   * Called once a session's DELETE reply has been written. On a device the server's test
   * method returns then and its instrumentation ends; the driver waits for that.
   */
  onSessionDeleted?: () => void;
  /** Optional: freezes the display's rotation (UiAutomation.setRotation); without it the display cannot turn. */
  rotate?: (rotation: Rotation) => void;
  /** The phone's clipboard (shared with Appium Settings); the server keeps its own without it. */
  clipboard?: { get(): string; set(text: string): void };
  /** Optional: the battery's level (of 100) and BatteryManager status; full without it. */
  battery?: () => { level: number; status: number };
  /** Optional: an installed package's label (the title of its window), null when unknown. */
  appLabel?: (pkg: string) => string | null;
}

/** W3C element reference key. */
export const ELEMENT_KEY = 'element-6066-11e4-a52e-4f735466cecf';
const TAG = 'AppiumUiAutomator2Server';
const MAX_BODY = 16 * 1024 * 1024;
/** How long the server lists a toast after it appeared (NotificationListener's TOAST_CLEAR_TIMEOUT). */
const TOAST_HEARD_MS = 3_500;

export class W3CError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
    this.name = 'W3CError';
  }
}

const noSuchElement = () =>
  new W3CError(
    404,
    'no such element',
    'An element could not be located on the page using the given search parameters.',
  );
const invalidArgument = (msg: string) => new W3CError(400, 'invalid argument', msg);

interface Session {
  id: string;
  capabilities: Record<string, unknown>;
  /** Element id -> node key. */
  elements: Map<string, string>;
  /** Node key -> element id, so finding the same view twice gives the same id. */
  ids: Map<string, string>;
}

interface Request {
  method: string;
  /** Path below /session/:id, or the whole path for session-less routes. */
  path: string;
  params: string[];
  body: Record<string, unknown>;
  session: Session | null;
}

type Handler = (r: Request) => unknown;

interface Route {
  /** Session routes match the path below /session/:id; global ones the whole path. */
  scope: 'global' | 'session';
  method: string;
  pattern: RegExp;
  handler: Handler;
}

/** WebDriver's private-use key characters that mean a key rather than text. */
const WEBDRIVER_KEYS: Record<string, number> = {
  '\ue003': KEYCODE.DEL,
  '\ue017': KEYCODE.DEL,
  '\ue004': KEYCODE.TAB,
  '\ue006': KEYCODE.ENTER,
  '\ue007': KEYCODE.ENTER,
  '\ue00c': KEYCODE.BACK,
};

class Uia2Server implements UiAutomator2Server {
  private readonly http = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    void this.serve(req, res);
  });
  private readonly sockets = new Set<Duplex>();
  private session: Session | null = null;
  private settings: Record<string, unknown> = {
    ignoreUnimportantViews: false,
    allowInvisibleElements: false,
    // XPath 2.0 (matches(), lower-case(), ...) unless set: the real server's EnforceXpath1.
    enforceXPath1: false,
    enableMultiWindows: false,
    waitForIdleTimeout: 10000,
    waitForSelectorTimeout: 10000,
    actionAcknowledgmentTimeout: 3000,
    scrollAcknowledgmentTimeout: 200,
    keyInjectionDelay: 0,
    trackScrollEvents: true,
    disableIdLocatorAutocompletion: false,
    shouldUseCompactResponses: true,
    elementResponseAttributes: '',
  };
  private clipboard = '';
  private closed = false;
  private readonly routes: Route[];

  constructor(
    private readonly ui: PhoneUi,
    private readonly info: UiAutomator2ServerInfo,
  ) {
    this.routes = this.defineRoutes();
  }

  handleConnection(socket: Duplex): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    // Forget a connection once it closes, or once this server ended it (Connection: close,
    // keep-alive timeout): a Duplex whose peer keeps its side open never emits 'close'.
    const forget = () => this.sockets.delete(socket);
    socket.once('close', forget);
    socket.once('finish', forget);
    // A broken stream must not take the phone's process down.
    socket.on('error', () => socket.destroy());
    this.http.emit('connection', socket);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.session = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    this.http.close();
  }

  private log(priority: 'V' | 'D' | 'I' | 'W' | 'E', message: string): void {
    this.info.log?.(priority, TAG, message);
  }

  // ---- HTTP plumbing ----

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = (req.url ?? '/').split('?')[0] ?? '/';
    // Older drivers prefix /wd/hub; the current one does not.
    const path = url.replace(/^\/wd\/hub(?=\/|$)/, '').replace(/\/+$/, '') || '/';
    let sessionId: string | null = null;
    try {
      const body = await readJson(req);
      const { route, params, rest, sid } = this.match(method, path);
      sessionId = sid;
      const session = sid !== null ? this.requireSession(sid) : null;
      const value = await route.handler({ method, path: rest, params, body, session });
      send(res, 200, {
        sessionId:
          session?.id ?? (isRecord(value) && typeof value.sessionId === 'string' ? value.sessionId : null),
        value: value ?? null,
      });
      if (method === 'DELETE' && rest === '/' && session)
        res.once('finish', () => this.info.onSessionDeleted?.());
    } catch (err) {
      const e =
        err instanceof W3CError
          ? err
          : new W3CError(500, 'unknown error', err instanceof Error ? err.message : String(err));
      if (e.status >= 500 || e.error === 'unknown command')
        this.log('W', `${method} ${path} failed: ${e.error}: ${e.message}`);
      send(res, e.status, {
        sessionId,
        value: {
          error: e.error,
          message: e.message,
          stacktrace: err instanceof Error ? (err.stack ?? '') : '',
        },
      });
    }
  }

  private match(
    method: string,
    path: string,
  ): { route: Route; params: string[]; rest: string; sid: string | null } {
    const m = /^\/session\/([^/]+)(\/.*)?$/.exec(path);
    const sid = m?.[1] ?? null;
    const rest = m ? (m[2] ?? '/') : path;
    for (const route of this.routes) {
      if (route.method !== method || (route.scope === 'session') !== (sid !== null)) continue;
      const hit = route.pattern.exec(rest);
      if (hit) return { route, params: hit.slice(1).map((p) => decodeURIComponent(p)), rest, sid };
    }
    throw new W3CError(
      404,
      'unknown command',
      `The requested resource could not be found, or a request was received using an HTTP method that is not supported by the mapped resource: ${method} ${path}`,
    );
  }

  private requireSession(sid: string): Session {
    if (!this.session || this.session.id !== sid)
      throw new W3CError(
        404,
        'invalid session id',
        `A session with id '${sid}' is either terminated or not started`,
      );
    return this.session;
  }

  // ---- the view tree ----

  /**
   * The toast the server heard of in the last 3.5 s (its NotificationListener's
   * TOAST_CLEAR_TIMEOUT), as the node it adds beside the window: an android.widget.Toast
   * with the toast's text, whose package the server always gives as com.android.settings.
   */
  private toastNode(): UiNodeInfo | null {
    const toast = this.ui.recentToast?.();
    // The toast's time is the UI's clock's: its age is read on that clock too.
    const now = this.ui.currentTimeMs?.() ?? Date.now();
    if (!toast || now - toast.at > TOAST_HEARD_MS) return null;
    return {
      ...PLAIN_VIEW,
      key: `toast/${toast.at}`,
      className: 'android.widget.Toast',
      packageName: 'com.android.settings',
      text: toast.text,
      enabled: false,
      bounds: { left: 0, top: 0, right: 0, bottom: 0 },
      children: [],
    };
  }

  private beside(): UiNodeInfo[] {
    const toast = this.toastNode();
    return toast ? [toast] : [];
  }

  /** The window's views, without the unimportant ones while `ignoreUnimportantViews` is on. */
  private tree(): UiNodeInfo {
    const t = this.ui.viewTree?.();
    if (!t) throw new W3CError(500, 'unknown error', 'This phone UI does not expose its view tree');
    return this.settings.ignoreUnimportantViews === true ? compressedTree(t) : t;
  }

  private static findKey(root: UiNodeInfo, key: string): UiNodeInfo | undefined {
    const stack = [root];
    while (stack.length) {
      const n = stack.pop();
      if (!n) break;
      if (n.key === key) return n;
      for (let i = n.children.length - 1; i >= 0; i--) {
        const c = n.children[i];
        if (c) stack.push(c);
      }
    }
    return undefined;
  }

  private static all(root: UiNodeInfo): UiNodeInfo[] {
    const out: UiNodeInfo[] = [];
    const visit = (n: UiNodeInfo) => {
      out.push(n);
      for (const c of n.children) visit(c);
    };
    visit(root);
    return out;
  }

  private elementRef(s: Session, node: UiNodeInfo): Record<string, string> {
    let id = s.ids.get(node.key);
    if (!id) {
      id = randomUUID();
      s.ids.set(node.key, id);
      s.elements.set(id, node.key);
    }
    return { [ELEMENT_KEY]: id, ELEMENT: id };
  }

  private element(r: Request, id = r.params[0]): UiNodeInfo {
    const s = r.session;
    const key = id !== undefined ? s?.elements.get(id) : undefined;
    if (!s || key === undefined)
      throw new W3CError(404, 'no such element', `The element '${id ?? ''}' is unknown in this session`);
    const node = Uia2Server.findKey(this.tree(), key) ?? this.beside().find((n) => n.key === key);
    if (!node) {
      throw new W3CError(
        404,
        'stale element reference',
        `The element '${id ?? ''}' does not exist in DOM anymore: its view left the screen. Find it again.`,
      );
    }
    return node;
  }

  /**
   * CustomUiDevice.setRotationSync: a display already at the rotation is left as it is (not
   * even frozen), at once, whatever the screen allows. Otherwise UiAutomation.setRotation
   * freezes the rotation where Android keeps it, and the display must have turned (an app or
   * the launcher that keeps portrait refuses).
   */
  private rotate(rotation: Rotation): void {
    if (this.rotation() === rotation) return;
    if (!this.info.rotate)
      throw new W3CError(500, 'unsupported operation', 'This phone cannot turn its display');
    this.info.rotate(rotation);
    if (this.rotation() !== rotation)
      throw new W3CError(
        400,
        'invalid element state',
        `Screen rotation cannot be changed to ROTATION_${rotation * 90} after 2000ms. Is it locked programmatically?`,
      );
  }

  /** The display as the page source describes it: its size now and its rotation. */
  private display(): { width: number; height: number; rotation: number } {
    return { ...this.size(), rotation: this.rotation() };
  }

  /** The display's rotation now (upright on a UI that cannot turn). */
  private rotation(): Rotation {
    return this.ui.rotation?.() ?? 0;
  }

  private size(): { width: number; height: number } {
    return { width: this.ui.width, height: this.ui.height };
  }

  // ---- finding ----

  private find(r: Request, multiple: boolean, contextId?: string): unknown {
    const s = r.session;
    if (!s) throw new W3CError(404, 'invalid session id', 'No session');
    const strategy = str(r.body.strategy ?? r.body.using);
    const selector = str(r.body.selector ?? r.body.value);
    if (!strategy) throw invalidArgument("'strategy' (or 'using') is required");
    if (selector === undefined || selector === '')
      throw invalidArgument("'selector' (or 'value') is required");
    const ctxId =
      contextId ?? (typeof r.body.context === 'string' && r.body.context ? r.body.context : undefined);
    const context = ctxId ? this.element(r, ctxId) : undefined;
    const found = this.locate(strategy, selector, context);
    if (multiple) return found.map((n) => this.elementRef(s, n));
    const first = found[0];
    if (!first) throw noSuchElement();
    return this.elementRef(s, first);
  }

  private locate(strategy: string, selector: string, context: UiNodeInfo | undefined): UiNodeInfo[] {
    const root = this.tree();
    const scope = context ? Uia2Server.all(context).slice(1) : [...Uia2Server.all(root), ...this.beside()];
    switch (strategy) {
      case 'id': {
        const pkg = this.ui.foreground().package;
        const ids = selector.includes(':id/')
          ? [selector]
          : [`${pkg}:id/${selector}`, `android:id/${selector}`];
        return scope.filter((n) => ids.includes(n.resourceId));
      }
      case 'accessibility id':
        return scope.filter((n) => n.contentDesc === selector);
      case 'class name':
        return scope.filter((n) => n.className === selector);
      case 'name':
        return scope.filter((n) => n.contentDesc === selector || n.text === selector);
      case 'text':
        return scope.filter((n) => n.text === selector);
      case 'xpath': {
        try {
          const doc = buildSource(root, this.display(), context, context ? [] : this.beside());
          return selectElements(selector, doc, {
            enforceXPath1: this.settings.enforceXPath1 === true,
          }).flatMap((el) => (el.node ? [el.node] : []));
        } catch (err) {
          if (err instanceof XPathError)
            throw new W3CError(
              400,
              'invalid selector',
              `Invalid XPath expression '${selector}': ${err.message}`,
            );
          throw err;
        }
      }
      case '-android uiautomator': {
        let statements: Statement[];
        try {
          statements = parseUiSelector(selector);
        } catch (err) {
          // A *Matches() pattern Android's Pattern refuses is its PatternSyntaxException,
          // which the server answers as an unknown error; other mistakes are the selector's.
          if (err instanceof UiSelectorPatternError) throw new W3CError(500, 'unknown error', err.message);
          if (err instanceof UiSelectorError)
            throw new W3CError(400, 'invalid selector', `Invalid UiSelector '${selector}': ${err.message}`);
          throw err;
        }
        const out: UiNodeInfo[] = [];
        for (const st of statements) out.push(...this.runStatement(st, context));
        return [...new Set(out)];
      }
      default:
        throw new W3CError(
          400,
          'invalid selector',
          `Locator strategy '${strategy}' is not supported for this session`,
        );
    }
  }

  private runStatement(st: Statement, context: UiNodeInfo | undefined): UiNodeInfo[] {
    if (st.kind === 'selector') return matchSelector(st.selector, this.tree(), context);
    const container = () => matchSelector(st.container, this.tree(), context)[0];
    if (!container()) return [];
    let result: UiNodeInfo[] = [];
    for (const action of st.actions) {
      if (action.kind === 'scrollIntoView') {
        const target = this.scrollIntoView(container, action.target, st.maxSwipes, context);
        result = target ? [target] : [];
      } else {
        const dir = action.kind === 'toEnd' || action.kind === 'forward' ? 1 : -1;
        const times = action.kind === 'forward' || action.kind === 'backward' ? 1 : st.maxSwipes;
        for (let i = 0; i < times && this.scrollOnce(container(), dir); i++);
        const c = container();
        result = c ? [c] : [];
      }
    }
    if (st.actions.length === 0) {
      const c = container();
      result = c ? [c] : [];
    }
    return result;
  }

  /** One swipe across a scrollable view; false when nothing moved (at the end). */
  private scrollOnce(container: UiNodeInfo | undefined, direction: 1 | -1): boolean {
    if (!container) return false;
    const b = container.bounds;
    const x = Math.round((b.left + b.right) / 2);
    const h = b.bottom - b.top;
    const mid = (b.top + b.bottom) / 2;
    const before = this.ui.version;
    const from = Math.round(mid + direction * h * 0.35);
    const to = Math.round(mid - direction * h * 0.35);
    this.ui.swipe(x, from, x, to, 300);
    return this.ui.version !== before;
  }

  /** UiScrollable.scrollIntoView: from the top, swipe forward until the target shows. */
  private scrollIntoView(
    container: () => UiNodeInfo | undefined,
    target: Selector,
    maxSwipes: number,
    context: UiNodeInfo | undefined,
  ): UiNodeInfo | undefined {
    return this.scrollUntil(container, () => matchSelector(target, this.tree(), context)[0], maxSwipes);
  }

  private scrollUntil(
    container: () => UiNodeInfo | undefined,
    look: () => UiNodeInfo | undefined,
    maxSwipes: number,
  ): UiNodeInfo | undefined {
    let hit = look();
    if (hit) return hit;
    for (let i = 0; i < maxSwipes && this.scrollOnce(container(), -1); i++) {
      hit = look();
      if (hit) return hit;
    }
    for (let i = 0; i < maxSwipes && this.scrollOnce(container(), 1); i++) {
      hit = look();
      if (hit) return hit;
    }
    return undefined;
  }

  // ---- actions ----

  private tapNode(n: UiNodeInfo): void {
    const b = n.bounds;
    this.ui.tap(Math.round((b.left + b.right) / 2), Math.round((b.top + b.bottom) / 2));
  }

  /** Types text, turning WebDriver key characters into key events. */
  private typeText(text: string): void {
    let buf = '';
    const flush = () => {
      if (buf) this.ui.text(buf);
      buf = '';
    };
    for (const ch of text) {
      const code = WEBDRIVER_KEYS[ch];
      if (code !== undefined) {
        flush();
        this.ui.key(code);
      } else if (ch >= '\ue000' && ch <= '\uf8ff') {
        // Other WebDriver modifier/function keys have no effect here.
      } else buf += ch;
    }
    flush();
  }

  private setValue(r: Request, node: UiNodeInfo, replace: boolean): void {
    const raw = r.body.text ?? r.body.value;
    const text = Array.isArray(raw)
      ? raw.map((x) => String(x)).join('')
      : typeof raw === 'string'
        ? raw
        : undefined;
    if (text === undefined) throw invalidArgument("'text' (or 'value') is required");
    if (!this.ui.setNodeText) {
      this.tapNode(node);
      this.typeText(text);
      return;
    }
    // A trailing Enter submits after the text is in, as it does when typed on a keyboard.
    const submit = /[\n\ue006\ue007]$/.test(text);
    const plain = text.replace(/[\n\ue006\ue007]+$/, '').replace(/[\ue000-\uf8ff]/g, '');
    if (!this.ui.setNodeText(node.key, plain, replace ? 'replace' : 'append')) {
      throw new W3CError(
        400,
        'invalid element state',
        `The element '${node.className}' does not accept text`,
      );
    }
    if (submit) this.ui.key(KEYCODE.ENTER);
  }

  private attribute(n: UiNodeInfo, name: string): string | null {
    switch (name) {
      case 'text':
      case 'name':
        return n.text;
      case 'resource-id':
      case 'resourceId':
        return n.resourceId;
      case 'content-desc':
      case 'contentDescription':
      case 'content-description':
        return n.contentDesc;
      case 'class':
      case 'className':
        return n.className;
      case 'package':
        return n.packageName;
      case 'bounds':
        return formatBounds(n.bounds);
      case 'hint':
        return n.hint;
      case 'displayed':
        return 'true';
      case 'enabled':
      case 'checked':
      case 'checkable':
      case 'focused':
      case 'focusable':
      case 'clickable':
      case 'scrollable':
      case 'selected':
      case 'password':
        return String(n[name]);
      case 'long-clickable':
      case 'longClickable':
        return String(n.longClickable);
      case 'selection-start':
      case 'selection-end':
        // A text field's cursor, which typing leaves at the end of its text; other views
        // have no selection (getTextSelectionStart is -1), which the server answers as null.
        return n.className === 'android.widget.EditText' ? String([...n.text].length) : null;
      case 'extras':
        // The node's extras Bundle: the phone's views put nothing in it.
        return null;
      default:
        // ElementHelpers.generateNoAttributeException: the names it answers, aliases in braces.
        throw new W3CError(
          404,
          'unknown command',
          `'${name}' attribute is unknown for the element. Only the following attributes are supported: [checkable, checked, {class,className}, clickable, {content-desc,contentDescription}, enabled, focusable, focused, {long-clickable,longClickable}, package, password, {resource-id,resourceId}, scrollable, selection-start, selection-end, selected, {text,name}, hint, extras, bounds, displayed]`,
        );
    }
  }

  private elementScreenshot(n: UiNodeInfo): string {
    const full = PNG.sync.read(this.ui.renderPng());
    const b = n.bounds;
    const w = Math.max(1, b.right - b.left);
    const h = Math.max(1, b.bottom - b.top);
    const out = new PNG({ width: w, height: h });
    PNG.bitblt(
      full,
      out,
      b.left,
      b.top,
      Math.min(w, full.width - b.left),
      Math.min(h, full.height - b.top),
      0,
      0,
    );
    return PNG.sync.write(out, { deflateLevel: 1, filterType: 1 }).toString('base64');
  }

  /** W3C actions: each pointer's down..up becomes a tap or a swipe; keys type text. */
  private performActions(r: Request): null {
    const sources = r.body.actions;
    if (!Array.isArray(sources)) throw invalidArgument("'actions' must be an array");
    for (const src of sources as unknown[]) {
      if (!isRecord(src) || !Array.isArray(src.actions))
        throw invalidArgument('each input source needs an actions array');
      if (src.type === 'pointer') this.pointerActions(r, src.actions as unknown[]);
      else if (src.type === 'key') {
        for (const a of src.actions as unknown[])
          if (isRecord(a) && a.type === 'keyDown' && typeof a.value === 'string') this.typeText(a.value);
      }
    }
    return null;
  }

  private pointerActions(r: Request, actions: unknown[]): void {
    let x = 0;
    let y = 0;
    // While down: where, how long in all, how long held before it first moved away.
    let down: { x: number; y: number; ms: number; heldMs: number; moved: boolean } | null = null;
    const away = () => !!down && Math.hypot(x - down.x, y - down.y) >= 10;
    for (const a of actions) {
      if (!isRecord(a)) continue;
      const ms = typeof a.duration === 'number' ? a.duration : 0;
      if (a.type === 'pointerMove') {
        const ox = typeof a.x === 'number' ? a.x : 0;
        const oy = typeof a.y === 'number' ? a.y : 0;
        const origin = a.origin;
        if (origin === 'pointer') {
          x += ox;
          y += oy;
        } else if (isRecord(origin)) {
          const id = str(origin[ELEMENT_KEY] ?? origin.ELEMENT);
          const b = this.element(r, id).bounds;
          x = (b.left + b.right) / 2 + ox;
          y = (b.top + b.bottom) / 2 + oy;
        } else {
          x = ox;
          y = oy;
        }
        if (down) {
          down.ms += ms;
          if (away()) down.moved = true;
          else if (!down.moved) down.heldMs += ms;
        }
      } else if (a.type === 'pointerDown') {
        down = { x, y, ms: 0, heldMs: 0, moved: false };
      } else if (a.type === 'pause') {
        if (down) {
          down.ms += ms;
          if (!down.moved) down.heldMs += ms;
        }
      } else if (a.type === 'pointerUp' && down) {
        const [x1, y1, x2, y2] = [down.x, down.y, x, y].map(Math.round) as [number, number, number, number];
        // A finger held in place past the long-press timeout is a long press; held there and
        // then moved, a drag.
        if (!away()) {
          if (down.ms >= LONG_PRESS_MS) this.ui.longPress(x1, y1);
          else this.ui.tap(x1, y1);
        } else if (down.heldMs >= LONG_PRESS_MS) this.drag(x1, y1, x2, y2, down.ms - down.heldMs);
        else this.ui.swipe(x1, y1, x2, y2, Math.max(1, down.ms));
        down = null;
      }
    }
  }

  /** A press held past the long-press timeout, then moved (see PhoneUi.drag). */
  private drag(x1: number, y1: number, x2: number, y2: number, moveMs: number): void {
    const lifted = this.ui.drag(x1, y1, x2, y2, Math.max(1, moveMs));
    if (lifted !== null)
      throw new W3CError(
        500,
        'unsupported operation',
        `The virtual phone does not model dragging "${lifted}" (held in place, it is a long click)`,
      );
  }

  /**
   * appium/gestures/*: the element in `origin` (the driver's shape), else `area`
   * ({left, top, width, height}), else the whole screen.
   */
  private gestureArea(r: Request): Rect {
    const id = gestureElementId(r);
    if (id) return this.element(r, id).bounds;
    return givenArea(r) ?? { left: 0, top: 0, right: this.ui.width, bottom: this.ui.height };
  }

  /**
   * A two-finger pinch (UiObject2.pinchOpen / pinchClose) on an element or an area. The
   * virtual phone's views do not zoom, as Android's stock views do not, so a pinch changes
   * nothing on them; the browser's page would zoom, which is not modeled.
   */
  private pinch(r: Request): void {
    if (typeof r.body.percent !== 'number') throw missingField('PinchModel', 'percent');
    const origin = r.body.origin;
    if (!isRecord(origin) && !isRecord(r.body.area))
      throw invalidArgument('The pinch area coordinates must be provided if element is not set');
    this.gestureArea(r);
    if (r.body.percent < 0 || r.body.percent > 1)
      throw invalidArgument('Percent must be between 0.0f and 1.0f');
    if (typeof r.body.speed === 'number' && r.body.speed < 0)
      throw invalidArgument('Speed cannot be negative');
    if (this.ui.foreground().package === BROWSER_PACKAGE_NAME)
      throw new W3CError(
        500,
        'unsupported operation',
        'The virtual phone does not model pinch-zoom in Chrome; zoom the page from its DevTools (the Page) instead',
      );
  }

  /** The built-in display as DisplayManager describes it (its DisplayMetrics at the rotation now). */
  private displayModel(): Record<string, unknown> {
    const scale = this.ui.density / 160;
    return {
      id: 0,
      name: 'Built-in Screen',
      physicalId: PHYSICAL_DISPLAY_ID,
      virtualId: null,
      metrics: {
        widthPixels: this.ui.width,
        heightPixels: this.ui.height,
        density: scale,
        densityDpi: this.ui.density,
        scaledDensity: scale,
        // The panel's own pixels per inch: `wm density` changes the density apps draw at, not these.
        xdpi: this.info.identity.density,
        ydpi: this.info.identity.density,
      },
      isDefault: true,
    };
  }

  private windowScene(skipScreenshots: boolean): WindowScene {
    const front = this.ui.foreground().package;
    return {
      width: this.ui.width,
      height: this.ui.height,
      front: { packageName: front, title: this.info.appLabel?.(front) ?? null },
      keyguard: this.ui.powerState?.().keyguard ?? false,
      statusBarHeight: this.ui.statusBarHeight,
      navigationBarHeight: this.navigationBarHeight(),
      rgba: skipScreenshots ? null : () => this.ui.renderRgba(),
    };
  }

  private navigationBarHeight(): number {
    return Math.round((48 * this.ui.density) / 160);
  }

  /**
   * Where swipe, scroll and fling gestures work, as the server's handlers take it: an
   * element's bounds less UiObject2's margins (a tenth of its width and height on each side:
   * getVisibleBoundsForGestures, so a list's gesture starts inside it, never on the bar below
   * it), or the `area` as given. Without either there is nothing to work on.
   */
  private gestureBounds(r: Request, gesture: 'swipe' | 'scroll' | 'fling'): Rect {
    const id = gestureElementId(r);
    if (id) {
      const b = this.element(r, id).bounds;
      const mx = Math.trunc((b.right - b.left) * GESTURE_MARGIN);
      const my = Math.trunc((b.bottom - b.top) * GESTURE_MARGIN);
      return { left: b.left + mx, top: b.top + my, right: b.right - mx, bottom: b.bottom - my };
    }
    const area = givenArea(r);
    if (!area)
      throw invalidArgument(`The ${gesture} area coordinates must be provided if element is not set`);
    return area;
  }

  /**
   * One swipe of `percent` of `area` with the finger going `direction` (Gestures.swipeRect):
   * from the area's edge (its bottom for up), `percent` of its height or width. Returns
   * whether the screen changed.
   */
  private swipeRect(area: Rect, direction: Direction, percent: number): boolean {
    const cx = (area.left + area.right) >> 1;
    const cy = (area.top + area.bottom) >> 1;
    const w = Math.trunc((area.right - area.left) * percent);
    const h = Math.trunc((area.bottom - area.top) * percent);
    const ends: Record<Direction, [number, number, number, number]> = {
      up: [cx, area.bottom, cx, area.bottom - h],
      down: [cx, area.top, cx, area.top + h],
      left: [area.right, cy, area.right - w, cy],
      right: [area.left, cy, area.left + w, cy],
    };
    const [x1, y1, x2, y2] = ends[direction];
    const before = this.ui.version;
    this.ui.swipe(x1, y1, x2, y2, 300);
    return this.ui.version !== before;
  }

  /** The gesture's `direction` (required) and, unless it takes none, `percent` (required). */
  private gestureArgs(r: Request, model: string): { direction: Direction; percent: number } {
    if (r.body.direction === undefined) throw missingField(model, 'direction');
    const percent = r.body.percent;
    if (model !== 'FlingModel' && typeof percent !== 'number') throw missingField(model, 'percent');
    const direction = str(r.body.direction)?.toLowerCase();
    if (!isDirection(direction)) throw invalidArgument("'direction' must be up, down, left or right");
    return { direction, percent: typeof percent === 'number' ? percent : 1 };
  }

  /** mobile: swipeGesture: the finger goes `direction` across `percent` (0 to 1) of the area. */
  private swipeGesture(r: Request): void {
    const { direction, percent } = this.gestureArgs(r, 'SwipeModel');
    if (percent < 0 || percent > 1) throw invalidArgument('Percent must be between 0.0f and 1.0f');
    this.swipeRect(this.gestureBounds(r, 'swipe'), direction, percent);
  }

  /**
   * mobile: scrollGesture: the content goes `direction` (the finger the other way), in swipes
   * of at most the whole area until `percent` is done (GestureController.scroll). True while
   * more remains: false once a swipe moved nothing (the end was reached).
   */
  private scrollGesture(r: Request): boolean {
    const { direction, percent } = this.gestureArgs(r, 'ScrollModel');
    if (percent < 0) throw invalidArgument('Percent must be greater than 0.0f');
    const area = this.gestureBounds(r, 'scroll');
    for (let left = percent; left > 0; left -= 1) {
      if (!this.swipeRect(area, REVERSE[direction], Math.min(left, 1))) return false;
    }
    return true;
  }

  /**
   * mobile: flingGesture: "to fling, we swipe in the opposite direction" (UiObject2.fling),
   * across the whole area; true while the content can still go `direction`. The virtual
   * phone's lists have no momentum: a fling moves them as far as a full scroll.
   */
  private flingGesture(r: Request): boolean {
    const { direction } = this.gestureArgs(r, 'FlingModel');
    return this.swipeRect(this.gestureBounds(r, 'fling'), REVERSE[direction], 1);
  }

  /** appium/gestures/click and long_click: at the element (offset inside it) or at an offset on screen. */
  private gestureClick(r: Request, long = false): void {
    const press = (x: number, y: number) => (long ? this.ui.longPress(x, y) : this.ui.tap(x, y));
    const offset = isRecord(r.body.offset) ? r.body.offset : null;
    const id = gestureElementId(r);
    if (id) {
      const b = this.element(r, id).bounds;
      const ox = typeof offset?.x === 'number' ? offset.x : (b.right - b.left) / 2;
      const oy = typeof offset?.y === 'number' ? offset.y : (b.bottom - b.top) / 2;
      press(Math.round(b.left + ox), Math.round(b.top + oy));
      return;
    }
    if (typeof offset?.x === 'number' && typeof offset.y === 'number') {
      press(Math.round(offset.x), Math.round(offset.y));
      return;
    }
    throw invalidArgument('a click needs an element (origin) or an offset');
  }

  /** The scrollable view to scroll: the given element, else the first scrollable on screen. */
  private scrollContainer(r: Request, id: string | undefined): () => UiNodeInfo | undefined {
    if (id) {
      const key = this.element(r, id).key;
      return () => Uia2Server.findKey(this.tree(), key);
    }
    return () => Uia2Server.all(this.tree()).find((n) => n.scrollable);
  }

  /** mobile: scroll — swipe the container until a locator finds something. */
  private scrollTo(r: Request): null {
    const params = isRecord(r.body.params) ? r.body.params : {};
    const strategy = str(params.strategy);
    const selector = str(params.selector);
    if (!strategy || !selector) throw invalidArgument("'params.strategy' and 'params.selector' are required");
    const origin = r.body.origin;
    const container = this.scrollContainer(
      r,
      str(isRecord(origin) ? (origin[ELEMENT_KEY] ?? origin.ELEMENT) : undefined),
    );
    if (!container()) throw noSuchElement();
    const maxSwipes = typeof params.maxSwipes === 'number' ? params.maxSwipes : 30;
    const hit = this.scrollUntil(container, () => this.locate(strategy, selector, undefined)[0], maxSwipes);
    if (!hit)
      throw new W3CError(
        404,
        'no such element',
        `Could not scroll to an element found by ${strategy} '${selector}'`,
      );
    return null;
  }

  /** mobile: scrollBackTo — swipe a container until a previously found element is back. */
  private scrollBackTo(r: Request): null {
    const s = r.session;
    const targetId = r.params[1] ?? '';
    const key = s?.elements.get(targetId);
    if (!s || key === undefined)
      throw new W3CError(404, 'no such element', `The element '${targetId}' is unknown in this session`);
    const container = this.scrollContainer(r, r.params[0]);
    if (!this.scrollUntil(container, () => Uia2Server.findKey(this.tree(), key), 30)) {
      throw new W3CError(404, 'no such element', `The element '${targetId}' did not come back into view`);
    }
    return null;
  }

  private deviceInfo(): Record<string, unknown> {
    const { identity } = this.info;
    return {
      androidId: '5a1e0ff1ce000001',
      apiVersion: String(identity.sdk),
      platformVersion: identity.release,
      manufacturer: identity.manufacturer,
      model: identity.model,
      brand: identity.manufacturer.toLowerCase(),
      realDisplaySize: `${this.ui.width}x${this.ui.height}`,
      displayDensity: this.ui.density,
      locale: 'en_US',
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      carrierName: 'phonelease',
      networks: [],
      bluetooth: { state: 'OFF' },
    };
  }

  // ---- routes ----

  private defineRoutes(): Route[] {
    const routes: Route[] = [];
    const add = (scope: Route['scope'], method: string, path: string, handler: Handler) => {
      const source = path.replace(/\//g, '\\/').replace(/:[a-z]+/g, '([^/]+)');
      routes.push({ scope, method, pattern: new RegExp(`^${source}$`), handler });
    };
    const global = (method: string, path: string, handler: Handler) => add('global', method, path, handler);
    const on = (method: string, path: string, handler: Handler) => add('session', method, path, handler);

    global('GET', '/status', () => ({
      ready: true,
      message: 'UiAutomator2 Server is ready to accept commands',
    }));
    global('GET', '/sessions', () =>
      this.session ? [{ id: this.session.id, capabilities: this.session.capabilities }] : [],
    );
    global('POST', '/session', (r) => {
      const caps = r.body.capabilities;
      const first =
        isRecord(caps) && Array.isArray(caps.firstMatch) && isRecord(caps.firstMatch[0])
          ? caps.firstMatch[0]
          : {};
      const always = isRecord(caps) && isRecord(caps.alwaysMatch) ? caps.alwaysMatch : {};
      const desired = isRecord(r.body.desiredCapabilities) ? r.body.desiredCapabilities : {};
      // One session at a time, as on the real server: a new one replaces the old.
      const id = randomUUID();
      this.session = {
        id,
        capabilities: { ...desired, ...always, ...first },
        elements: new Map(),
        ids: new Map(),
      };
      this.log('I', `Created the new session with id ${id}`);
      return { sessionId: id, capabilities: this.session.capabilities };
    });
    on('DELETE', '/', () => {
      if (this.session) this.log('I', `Deleted session ${this.session.id}`);
      this.session = null;
      return null;
    });
    on('GET', '/', (r) => r.session?.capabilities ?? {});

    on('GET', '/appium/device/pixel_ratio', () => this.ui.density / 160);
    on('GET', '/appium/device/display_density', () => this.ui.density);
    on('GET', '/appium/device/system_bars', () => ({
      statusBar: this.ui.statusBarHeight,
      navigationBar: this.navigationBarHeight(),
    }));
    on('GET', '/appium/device/info', () => this.deviceInfo());
    // BatteryStatusModel: the level as a fraction of the scale, and BatteryManager's status
    // (the driver renames it `state`).
    on('GET', '/appium/device/battery_info', () => {
      const battery = this.info.battery?.() ?? { level: 100, status: 5 };
      return { level: battery.level / 100, status: battery.status };
    });
    on('GET', '/appium/device/current_activity', () => this.ui.foreground().activity);
    on('GET', '/appium/device/current_package', () => this.ui.foreground().package);
    on('POST', '/appium/device/press_keycode', (r) => this.pressKey(r));
    on('POST', '/appium/device/long_press_keycode', (r) => {
      // POWER's menu and HOME's assistant are not modeled; it turned the screen off.
      if (SYSTEM_LONG_PRESS.has(Number(r.body.keycode)))
        throw new W3CError(
          500,
          'unsupported operation',
          `The virtual phone does not model a long press of keycode ${String(r.body.keycode)} (the system's menu or assistant)`,
        );
      // The key's down, its long-press repeat and its up: a key that types or deletes acts twice.
      this.pressKey(r);
      if (repeatsWhenHeld(Number(r.body.keycode))) this.pressKey(r);
      return null;
    });
    on('POST', '/appium/device/open_notifications', () => {
      throw new W3CError(
        500,
        'unsupported operation',
        'The virtual phone draws no notification shade to open (no notifications are posted on it)',
      );
    });
    on('POST', '/appium/device/get_clipboard', () =>
      Buffer.from(this.info.clipboard?.get() ?? this.clipboard).toString('base64'),
    );
    on('POST', '/appium/device/set_clipboard', (r) => {
      const content = Buffer.from(str(r.body.content) ?? '', 'base64').toString('utf8');
      if (this.info.clipboard) this.info.clipboard.set(content);
      else this.clipboard = content;
      return null;
    });
    on('POST', '/appium/reset_ax_cache', () => null);
    on('POST', '/appium/list_displays', () => [this.displayModel()]);
    on('POST', '/appium/list_windows', (r) =>
      listWindows(
        this.windowScene(r.body.skipScreenshots === true),
        isRecord(r.body.filters) ? r.body.filters : null,
      ),
    );
    // The activity in front's android:screenOrientation: the phone runs only its built-in
    // apps, and none of their activities declares one.
    on('GET', '/appium/device/declared_orientation', () => 'SCREEN_ORIENTATION_UNSPECIFIED');
    for (const path of ['/appium/schedule_action', '/appium/unschedule_action', '/appium/action_history']) {
      on('POST', path, () => {
        throw new W3CError(
          500,
          'unsupported operation',
          'The virtual phone does not model scheduled actions (mobile: scheduleAction, unscheduleAction, getActionHistory); run the steps from the test instead',
        );
      });
    }
    on('GET', '/window/current/size', () => this.size());
    on('GET', '/window/:handle/size', () => this.size());
    on('GET', '/window/rect', () => ({ x: 0, y: 0, ...this.size() }));
    on('GET', '/window', () => 'NATIVE_APP');
    on('GET', '/window/handles', () => ['NATIVE_APP']);
    on('GET', '/orientation', () => (this.rotation() % 2 ? 'LANDSCAPE' : 'PORTRAIT'));
    on('POST', '/orientation', (r) => {
      const value = gsonString(r.body.orientation, 'orientation');
      if (value === null) throw missingField('OrientationModel', 'orientation');
      const name = value.toUpperCase();
      if (name !== 'LANDSCAPE' && name !== 'PORTRAIT')
        throw invalidArgument(
          `java.lang.IllegalArgumentException: Orientation value '${value}' is not supported. Only 'LANDSCAPE' and 'PORTRAIT' values could be translated into a valid screen orientation`,
        );
      // The server's defaults: LANDSCAPE is ROTATION_270, PORTRAIT ROTATION_0.
      this.rotate(name === 'LANDSCAPE' ? 3 : 0);
      return name;
    });
    on('GET', '/rotation', () => ({ x: 0, y: 0, z: this.rotation() * 90 }));
    on('POST', '/rotation', (r) => {
      // RotationModel's x and y are Integers too: Gson reads them, the handler ignores them.
      gsonInteger(r.body.x, 'x');
      gsonInteger(r.body.y, 'y');
      const z = gsonInteger(r.body.z, 'z');
      if (z === null) throw missingField('RotationModel', 'z');
      if (z !== 0 && z !== 90 && z !== 180 && z !== 270)
        throw invalidArgument(
          `java.lang.IllegalArgumentException: Rotation value of ${z} degrees is not supported. Only 0, 90, 180 and 270 degrees could be translated into a valid screen rotation`,
        );
      const rotation = (z / 90) as Rotation;
      this.rotate(rotation);
      return `ROTATION_${z}`;
    });
    on('GET', '/appium/settings', () => this.settings);
    on('POST', '/appium/settings', (r) => {
      if (!isRecord(r.body.settings)) throw invalidArgument("'settings' must be an object");
      this.settings = { ...this.settings, ...r.body.settings };
      return this.settings;
    });
    on('GET', '/timeouts', () => ({ implicit: 0, pageLoad: 300000, script: 30000 }));
    on('POST', '/timeouts', () => null);
    on('GET', '/appium/app/:name', () => null);
    on('POST', '/appium/app/strings', () => ({}));
    on('POST', '/appium/app/:name', () => null);

    on('GET', '/source', () =>
      serializeSource(buildSource(this.tree(), this.display(), undefined, this.beside())),
    );
    on('GET', '/screenshot', () => this.ui.renderPng().toString('base64'));
    on('POST', '/back', () => {
      this.ui.key(KEYCODE.BACK);
      return null;
    });
    on('POST', '/keys', (r) => {
      const raw = r.body.text ?? r.body.value;
      const text = Array.isArray(raw) ? raw.map((x) => String(x)).join('') : str(raw);
      if (text === undefined) throw invalidArgument("'text' (or 'value') is required");
      this.typeText(text);
      return null;
    });
    on('POST', '/actions', (r) => this.performActions(r));
    on('DELETE', '/actions', () => null);
    on('GET', '/alert/text', () => {
      throw new W3CError(404, 'no such alert', 'No alert is open');
    });
    on('POST', '/alert/accept', () => {
      throw new W3CError(404, 'no such alert', 'No alert is open');
    });
    on('POST', '/alert/dismiss', () => {
      throw new W3CError(404, 'no such alert', 'No alert is open');
    });

    on('POST', '/element', (r) => this.find(r, false));
    on('POST', '/elements', (r) => this.find(r, true));
    on('GET', '/element/active', (r) => {
      const s = r.session;
      const focused = Uia2Server.all(this.tree()).find((n) => n.focused);
      if (!s || !focused) throw noSuchElement();
      return this.elementRef(s, focused);
    });
    on('POST', '/element/:id/element', (r) => this.find(r, false, r.params[0]));
    on('POST', '/element/:id/elements', (r) => this.find(r, true, r.params[0]));
    on('POST', '/element/:id/click', (r) => {
      this.tapNode(this.element(r));
      return null;
    });
    on('GET', '/element/:id/text', (r) => this.element(r).text);
    on('GET', '/element/:id/name', (r) => this.element(r).className);
    on('POST', '/element/:id/clear', (r) => {
      const n = this.element(r);
      this.ui.setNodeText?.(n.key, '', 'replace');
      return null;
    });
    on('POST', '/element/:id/value', (r) => {
      this.setValue(r, this.element(r), r.body.replace === true);
      return null;
    });
    on('POST', '/appium/element/:id/value', (r) => {
      this.setValue(r, this.element(r), false);
      return null;
    });
    on('POST', '/appium/element/:id/replace_value', (r) => {
      this.setValue(r, this.element(r), true);
      return null;
    });
    on('GET', '/element/:id/attribute/:name', (r) => this.attribute(this.element(r), r.params[1] ?? ''));
    on('GET', '/element/:id/enabled', (r) => this.element(r).enabled);
    on('GET', '/element/:id/displayed', (r) => (this.element(r), true));
    on('GET', '/element/:id/selected', (r) => this.element(r).selected);
    on('GET', '/element/:id/rect', (r) => {
      const b = this.element(r).bounds;
      return { x: b.left, y: b.top, width: b.right - b.left, height: b.bottom - b.top };
    });
    on('GET', '/element/:id/location', (r) => {
      const b = this.element(r).bounds;
      return { x: b.left, y: b.top };
    });
    on('GET', '/element/:id/location_in_view', (r) => {
      const b = this.element(r).bounds;
      return { x: b.left, y: b.top };
    });
    on('GET', '/element/:id/size', (r) => {
      const b = this.element(r).bounds;
      return { width: b.right - b.left, height: b.bottom - b.top };
    });
    on('GET', '/element/:id/screenshot', (r) => this.elementScreenshot(this.element(r)));
    on('GET', '/appium/element/:id/first_visible', (r) => {
      const s = r.session;
      const child = this.element(r).children[0];
      if (!s || !child) throw noSuchElement();
      return this.elementRef(s, child);
    });

    on('POST', '/gestures/scroll_to', (r) => this.scrollTo(r));
    on('POST', '/appium/element/:id/scroll_to/:to', (r) => this.scrollBackTo(r));
    on('POST', '/appium/gestures/click', (r) => {
      this.gestureClick(r);
      return null;
    });
    on('POST', '/appium/gestures/long_click', (r) => {
      this.gestureClick(r, true);
      return null;
    });
    on('POST', '/appium/gestures/double_click', (r) => {
      this.gestureClick(r);
      this.gestureClick(r);
      return null;
    });
    on('POST', '/appium/gestures/pinch_open', (r) => (this.pinch(r), null));
    on('POST', '/appium/gestures/pinch_close', (r) => (this.pinch(r), null));
    on('POST', '/appium/gestures/swipe', (r) => (this.swipeGesture(r), null));
    on('POST', '/appium/gestures/fling', (r) => this.flingGesture(r));
    // True while more content remains, which the driver uses to loop.
    on('POST', '/appium/gestures/scroll', (r) => this.scrollGesture(r));
    on('POST', '/appium/gestures/drag', (r) => {
      // From `start` (or the origin element's centre) to `end`, in screen pixels.
      const a = this.gestureArea(r);
      const start = isRecord(r.body.start) ? r.body.start : {};
      const end = isRecord(r.body.end) ? r.body.end : {};
      if (typeof end.x !== 'number' || typeof end.y !== 'number')
        throw invalidArgument("'end' {x, y} is required");
      const sx = typeof start.x === 'number' ? start.x : (a.left + a.right) / 2;
      const sy = typeof start.y === 'number' ? start.y : (a.top + a.bottom) / 2;
      // UiObject2.drag: a press held for the long-press timeout, then the move.
      this.drag(Math.round(sx), Math.round(sy), Math.round(end.x), Math.round(end.y), 500);
      return null;
    });
    return routes;
  }

  private pressKey(r: Request): null {
    const code = r.body.keycode;
    if (typeof code !== 'number') throw invalidArgument("'keycode' must be a number");
    const meta = typeof r.body.metastate === 'number' ? r.body.metastate : 0;
    // A key with CTRL, ALT, META, SYM or FUNCTION held is a shortcut (CTRL+A selects all),
    // which the virtual phone's views do not take: typing the letter instead would be wrong.
    if ((meta & SHORTCUT_META) !== 0)
      throw new W3CError(
        500,
        'unsupported operation',
        `The virtual phone does not model key shortcuts (metastate 0x${meta.toString(16)} holds CTRL, ALT, META, SYM or FUNCTION); press keys without them`,
      );
    // Letters and digits arrive as key codes from pressKeyCode(); they type characters.
    const ch = keycodeChar(code, (meta & SHIFT_META) !== 0);
    if (ch !== null) this.ui.text(ch);
    else this.ui.key(code);
    return null;
  }
}

/** KeyEvent.META_SHIFT_ON, META_SHIFT_LEFT_ON, META_SHIFT_RIGHT_ON. */
const SHIFT_META = 0x1 | 0x40 | 0x80;
/** KeyEvent's ALT (0x2, 0x10, 0x20), SYM 0x4, FUNCTION 0x8, CTRL (0x1000-0x4000), META (0x10000-0x40000). */
const SHORTCUT_META = 0x2 | 0x4 | 0x8 | 0x10 | 0x20 | 0x7000 | 0x70000;

/**
 * BaseModel.validate() on a @RequiredField left null (absent, or JSON null): an
 * IllegalArgumentException, which the handler answers as an invalid argument whose message
 * is the exception's toString().
 */
type Direction = 'up' | 'down' | 'left' | 'right';
type Rect = { left: number; top: number; right: number; bottom: number };
const REVERSE: Record<Direction, Direction> = { up: 'down', down: 'up', left: 'right', right: 'left' };
const isDirection = (d: string | undefined): d is Direction => d !== undefined && d in REVERSE;
/** UiObject2's DEFAULT_GESTURE_MARGIN_PERCENT: gestures on an element keep off its edges. */
const GESTURE_MARGIN = 0.1;

/** A gesture's element: `elementId`, or the element in `origin` (the driver's shape). */
function gestureElementId(r: Request): string | undefined {
  const origin = r.body.origin;
  return str(r.body.elementId ?? (isRecord(origin) ? (origin[ELEMENT_KEY] ?? origin.ELEMENT) : undefined));
}

/** A gesture's `area` ({left, top, width, height}, or those fields in the body), if given. */
function givenArea(r: Request): Rect | null {
  const { left, top, width, height } = isRecord(r.body.area) ? r.body.area : r.body;
  if (
    typeof left === 'number' &&
    typeof top === 'number' &&
    typeof width === 'number' &&
    typeof height === 'number'
  )
    return { left, top, right: left + width, bottom: top + height };
  return null;
}

function missingField(model: string, field: string): W3CError {
  return invalidArgument(
    `java.lang.IllegalArgumentException: ${model}: The mandatory field '${field}' is not present in JSON`,
  );
}

/**
 * A JsonSyntaxException of Gson reading the body into the handler's model, answered as an
 * invalid argument. Gson also says where in the body (" at line L column C path $.field");
 * the body is parsed here before it is read, so only the path is given.
 */
function gsonSyntax(cause: string): W3CError {
  return invalidArgument(`com.google.gson.JsonSyntaxException: ${cause}`);
}

/** The token Gson names when a value is not the kind it expected (JsonToken). */
function gsonToken(value: unknown): string {
  if (Array.isArray(value)) return 'BEGIN_ARRAY';
  if (typeof value === 'boolean') return 'BOOLEAN';
  return 'BEGIN_OBJECT';
}

/**
 * Gson reading a JSON value into a String field (TypeAdapters.STRING): null for an absent
 * or null value, numbers and booleans as their text; an object or an array is refused.
 */
function gsonString(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  throw gsonSyntax(
    `java.lang.IllegalStateException: Expected a string but was ${gsonToken(value)} path $.${field}`,
  );
}

/** What Double.parseDouble takes (decimal only): digits, a point, an exponent, a type suffix. */
const JAVA_DOUBLE = /^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)$/;

/**
 * Gson reading a JSON value into an Integer field (JsonReader.nextInt): null for an absent or
 * null value; a number, or a string that holds one ({"z": "90"} is 90), when it is a whole
 * int; a fraction, text that is no number, or another kind of value is refused with Gson's
 * words.
 */
function gsonInteger(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' && typeof value !== 'string')
    throw gsonSyntax(
      `java.lang.IllegalStateException: Expected an int but was ${gsonToken(value)} path $.${field}`,
    );
  const isInt = (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
  // A quoted value is tried as Integer.parseInt first, then as a double.
  if (typeof value === 'string' && /^[+-]?\d+$/.test(value) && isInt(Number(value))) return Number(value);
  const text = typeof value === 'string' ? value.trim() : String(value);
  if (typeof value === 'string' && !JAVA_DOUBLE.test(text))
    throw gsonSyntax(
      `java.lang.NumberFormatException: ${text === '' ? 'empty String' : `For input string: "${text}"`}`,
    );
  const asDouble = typeof value === 'number' ? value : Number(text.replace(/[fFdD]$/, ''));
  if (!isInt(asDouble))
    throw gsonSyntax(
      `java.lang.NumberFormatException: Expected an int but was ${String(value)} path $.${field}`,
    );
  return asDouble;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': data.length });
  res.end(data);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY) throw invalidArgument('request body too large');
    chunks.push(b);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument('the request body is not valid JSON');
  }
  if (!isRecord(parsed)) throw invalidArgument('the request body must be a JSON object');
  return parsed;
}

/**
 * Creates the UiAutomator2 server for one phone. The system side calls this when
 * `am instrument` of io.appium.uiautomator2.server.test starts, passes it every
 * connection to device port 6790, and closes it when the instrumentation stops.
 */
export function createUiAutomator2Server(ui: PhoneUi, info: UiAutomator2ServerInfo): UiAutomator2Server {
  return new Uia2Server(ui, info);
}
