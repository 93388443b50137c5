/**
 * `monkey --port N`: Monkey's network script server (MonkeySourceNetwork), what adbkit's
 * openMonkey and STF drive a phone with. It listens on the phone's loopback, serves one
 * client at a time, a command a line, and answers `OK`, `OK:value`, `ERROR` or
 * `ERROR:message`: `tap`, `touch down|move|up`, `key down|up`, `press`, `type`, `wake`,
 * `sleep`, `listvar` and `getvar`; `done` (or the client going away) ends the session and
 * the next client is served, `quit` ends monkey. A comment (`#`) and an unknown command get
 * no answer, as in Monkey. What the phone does not model (a keyboard lid, a trackball, the
 * view queries, which need an accessibility connection) answers ERROR saying so.
 */
import type { Duplex } from 'node:stream';
import { DEVICE } from '../../identity.js';
import { KEYCODE } from '../../ui/types.js';
import { javaInt, type CommandContext } from '../command.js';
import { keycodeOf } from './display.js';

/** MonkeySourceNetwork.MONKEY_NETWORK_VERSION. */
const MONKEY_NETWORK_VERSION = 2;
const EARG = 'ERROR:Invalid Argument';

/** A line's words, as commandLineSplit splits them: a quoted run (`"a b"`) is one word. */
export function commandLineSplit(line: string): string[] {
  const words: string[] = [];
  let quoted: string | null = null;
  for (const token of line.split(/[ \t\n\r\f]+/).filter(Boolean)) {
    const word = token.replaceAll('\\"', '"');
    if (quoted === null && token.startsWith('"')) {
      quoted = word;
      if (token.length > 1 && token.endsWith('"')) {
        words.push(quoted.slice(1, -1));
        quoted = null;
      }
    } else if (quoted !== null) {
      quoted += ` ${word}`;
      if (token.endsWith('"')) {
        words.push(quoted.slice(1, -1));
        quoted = null;
      }
    } else words.push(word);
  }
  return words;
}

/** One network session's state: where a touch went down, and how many events it injected. */
interface Session {
  down: { x: number; y: number; at: number } | null;
  events: number;
}

/** The variables of `listvar` / `getvar` (MonkeySourceNetworkVars) the phone has. */
function variables(ctx: CommandContext): Map<string, () => string> {
  const prop = (key: string) => () => ctx.device.props.get(key) ?? '';
  const display = () => ctx.device.display();
  return new Map([
    ['build.board', prop('ro.product.board')],
    ['build.brand', prop('ro.product.brand')],
    ['build.cpu_abi', prop('ro.product.cpu.abi')],
    ['build.device', prop('ro.product.device')],
    ['build.display', prop('ro.build.display.id')],
    ['build.fingerprint', prop('ro.build.fingerprint')],
    ['build.host', prop('ro.build.host')],
    ['build.id', prop('ro.build.id')],
    ['build.manufacturer', prop('ro.product.manufacturer')],
    ['build.model', prop('ro.product.model')],
    ['build.product', prop('ro.product.name')],
    ['build.tags', prop('ro.build.tags')],
    ['build.type', prop('ro.build.type')],
    ['build.user', prop('ro.build.user')],
    ['build.version.codename', prop('ro.build.version.codename')],
    ['build.version.incremental', prop('ro.build.version.incremental')],
    ['build.version.release', prop('ro.build.version.release')],
    ['build.version.sdk', () => String(DEVICE.sdk)],
    ['clock.millis', () => String(ctx.device.now())],
    ['clock.realtime', () => String(Math.max(0, ctx.device.now() - ctx.device.bootMs))],
    ['clock.uptime', () => String(Math.max(0, ctx.device.now() - ctx.device.bootMs))],
    // DisplayMetrics.density as Java prints a float: 2.0, 2.625.
    ['display.density', () => javaFloat(display().density / 160)],
    ['display.height', () => String(display().height)],
    ['display.width', () => String(display().width)],
    ['monkey.version', () => String(MONKEY_NETWORK_VERSION)],
  ]);
}

function javaFloat(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

/** What the phone does not model, by command. */
const NOT_MODELED: Record<string, string> = {
  flip: 'flip (a keyboard lid) is not modeled by the virtual phone',
  trackball: 'trackball is not modeled by the virtual phone; use press DPAD_*',
  listviews: 'view queries are not modeled by the virtual phone (use uiautomator dump)',
  queryview: 'view queries are not modeled by the virtual phone (use uiautomator dump)',
  getrootview: 'view queries are not modeled by the virtual phone (use uiautomator dump)',
  getviewswithtext: 'view queries are not modeled by the virtual phone (use uiautomator dump)',
  deferreturn: 'deferreturn is not modeled by the virtual phone: send the command, then poll',
};

/**
 * Runs one command line: its answer (null: none, as for an unknown command) and how long
 * the session sleeps after answering (`sleep`, whose event runs before the next command).
 */
function runCommand(
  ctx: CommandContext,
  session: Session,
  words: string[],
): { answer: string | null; sleepMs?: number } {
  const ui = ctx.device.ui;
  const ints = (from: number, n: number): number[] | null => {
    const values = words.slice(from, from + n).map((w) => javaInt(w));
    return values.length === n && values.every((v) => v !== null) ? (values as number[]) : null;
  };
  const [name] = words;
  if (name === undefined) return { answer: null };
  if (NOT_MODELED[name]) return { answer: `ERROR:${NOT_MODELED[name]}` };
  switch (name) {
    case 'tap': {
      const at = words.length === 3 ? ints(1, 2) : null;
      if (!at) return { answer: EARG };
      ui.tap(at[0]!, at[1]!);
      session.events += 2;
      return { answer: 'OK' };
    }
    case 'touch': {
      const at = words.length === 4 ? ints(2, 2) : null;
      const action = words[1];
      if (!at || !['down', 'move', 'up'].includes(action ?? '')) return { answer: EARG };
      const [x, y] = at as [number, number];
      session.events++;
      // A gesture is what the finger did from down to up: held in place it is a tap or a
      // long press, moved it is a swipe over the time it took.
      if (action === 'down') session.down = { x, y, at: Date.now() };
      else if (action === 'up' && session.down) {
        const start = session.down;
        session.down = null;
        ui.swipe(start.x, start.y, x, y, Math.max(1, Date.now() - start.at));
      }
      return { answer: 'OK' };
    }
    case 'key':
    case 'press': {
      const spec = name === 'key' ? words[2] : words[1];
      const code = words.length === (name === 'key' ? 3 : 2) ? keycodeOf(spec ?? '') : null;
      if (code === null || (name === 'key' && !['down', 'up'].includes(words[1] ?? '')))
        return { answer: EARG };
      // A key acts as it goes down; its up ends the press.
      if (name === 'press' || words[1] === 'down') ui.key(code);
      session.events += name === 'press' ? 2 : 1;
      return { answer: 'OK' };
    }
    case 'type': {
      if (words.length !== 2) return { answer: EARG };
      ui.text(words[1]!);
      session.events += words[1]!.length * 2;
      return { answer: 'OK' };
    }
    case 'wake':
      ui.key(KEYCODE.WAKEUP);
      return { answer: 'OK' };
    case 'sleep': {
      const ms = words.length === 2 ? javaInt(words[1]!) : null;
      if (ms === null) return { answer: EARG };
      session.events++;
      return { answer: 'OK', sleepMs: Math.max(0, ms) };
    }
    case 'listvar':
      return { answer: `OK:${[...variables(ctx).keys()].join(' ')}` };
    case 'getvar': {
      if (words.length !== 2) return { answer: EARG };
      const variable = words[1]!;
      if (variable.startsWith('am.current.'))
        return { answer: `ERROR:${variable} is not modeled by the virtual phone` };
      const get = variables(ctx).get(variable);
      return { answer: get ? `OK:${get()}` : 'ERROR:unknown var' };
    }
    default:
      return { answer: null };
  }
}

/** Lines from a socket, as BufferedReader.readLine splits them (`\n`, `\r\n` or `\r`); null at the end. */
function lineReader(socket: Duplex): () => Promise<string | null> {
  let buffered = '';
  let ended = false;
  let wake: (() => void) | null = null;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    wake?.();
  });
  const finish = () => {
    ended = true;
    wake?.();
  };
  socket.once('end', finish);
  socket.once('close', finish);
  socket.on('error', finish);
  return async () => {
    for (;;) {
      const at = buffered.search(/\r\n|\r|\n/);
      if (at >= 0) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + (buffered.startsWith('\r\n', at) ? 2 : 1));
        return line;
      }
      if (ended) {
        const rest = buffered;
        buffered = '';
        return rest.length > 0 ? rest : null;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  };
}

/**
 * Serves Monkey's network protocol on the phone's `port` until `quit` or the command is
 * interrupted; resolves with the events injected, or null when the port is taken.
 */
export async function serveMonkeyNetwork(ctx: CommandContext, port: number): Promise<number | null> {
  const network = ctx.device.network;
  if (network.isListening(port)) return null;
  const waiting: Duplex[] = [];
  let arrived: (() => void) | null = null;
  // Bound to localhost, as MonkeySourceNetwork binds it: reached through adb forward.
  const unlisten = network.listen(
    port,
    (socket) => {
      waiting.push(socket);
      arrived?.();
    },
    { uid: ctx.cred.uid, bind: 'loopback' },
  );
  const onAbort = () => {
    arrived?.();
    for (const socket of waiting) socket.destroy();
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  const session: Session = { down: null, events: 0 };
  try {
    for (;;) {
      while (waiting.length === 0 && !ctx.signal.aborted)
        await new Promise<void>((resolve) => (arrived = resolve));
      if (ctx.signal.aborted) return session.events;
      const client = waiting.shift()!;
      const readLine = lineReader(client);
      const abortClient = () => client.destroy();
      ctx.signal.addEventListener('abort', abortClient, { once: true });
      // A client is served until `done` or until it goes away; `quit` ends monkey.
      for (;;) {
        const line = await readLine();
        if (line === null || line === 'done') break;
        if (line === 'quit') {
          client.end('OK\n');
          return session.events;
        }
        if (line.startsWith('#')) continue;
        const { answer, sleepMs } = runCommand(ctx, session, commandLineSplit(line));
        if (answer !== null && !client.destroyed) client.write(`${answer}\n`);
        if (sleepMs) await new Promise((resolve) => setTimeout(resolve, sleepMs));
      }
      ctx.signal.removeEventListener('abort', abortClient);
      session.down = null;
      client.end();
    }
  } finally {
    unlisten();
    ctx.signal.removeEventListener('abort', onAbort);
    for (const socket of waiting) socket.destroy();
  }
}
