/**
 * The built-in Login app (com.phonelease.login): the demo app that Appium and adb examples
 * drive. Two outlined text fields, a button and a result line; demo/secret is the one
 * account that signs in.
 */
import { CLICK_FRAMES, type AppException } from '../../app-crash.js';
import type { Rect } from '../raster.js';
import { rect } from '../raster.js';
import { isDark, type Palette } from '../theme.js';
import { ViewFactory } from '../views.js';
import type { Painter, ViewNode } from '../views.js';
import { appBar, drawLabel, filledButton, fillFrame, textView } from '../widgets.js';
import { IME_ACTION, KEYCODE } from '../types.js';
import type { LoginField, LoginState, ScreenContext, ScreenView } from './screen.js';

export const LOGIN_PACKAGE = 'com.phonelease.login';
export const LOGIN_ACTIVITY = 'com.phonelease.login.LoginActivity';

const BULLET = '\u2022';

export const LOGIN_MESSAGES = {
  missing: 'Enter username and password',
  wrong: 'Wrong username or password',
  pending: 'Signing in\u2026',
} as const;

/**
 * Accounts that sign in. `slow` answers after SLOW_LOGIN_MS, like an app waiting for its
 * backend: tests of auto-waiting use it (the button is disabled meanwhile).
 */
export const SLOW_LOGIN_MS = 1500;
const ACCOUNTS: Record<string, { password: string; delayMs: number }> = {
  demo: { password: 'secret', delayMs: 0 },
  slow: { password: 'secret', delayMs: SLOW_LOGIN_MS },
};

/**
 * Signing in as this user crashes the app (any password), as an app with a bug would: the
 * runtime logs its FATAL EXCEPTION, the process dies and the launcher shows. Tests of crash
 * reports use it.
 */
export const CRASH_USER = 'crash';

/** What the Login app throws when `crash` signs in. */
const CRASH_EXCEPTION: AppException = {
  className: 'java.lang.IllegalStateException',
  message: 'Login crashed on purpose: the test account "crash" always crashes the app',
  frames: [
    'com.phonelease.login.LoginActivity.signIn(LoginActivity.java:87)',
    'com.phonelease.login.LoginActivity.lambda$onCreate$0(LoginActivity.java:52)',
    'com.phonelease.login.LoginActivity.$r8$lambda$Qx3kRmT0vJc1(Unknown Source:0)',
    'com.phonelease.login.LoginActivity$$ExternalSyntheticLambda0.onClick(D8$$SyntheticClass:0)',
    ...CLICK_FRAMES,
  ],
};

export function newLoginState(id: number): LoginState {
  return { kind: 'login', id, username: '', password: '', focus: null, result: '' };
}

/** Checks the credentials, sets the result line and logs the attempt (never the password). */
export function submitLogin(state: LoginState, ctx: ScreenContext): void {
  if (state.pending) return;
  let outcome: 'success' | 'failure' | 'missing';
  const account = Object.hasOwn(ACCOUNTS, state.username) ? ACCOUNTS[state.username] : undefined;
  if (!state.username || !state.password) {
    state.result = LOGIN_MESSAGES.missing;
    outcome = 'missing';
  } else if (state.username === CRASH_USER) {
    ctx.crash(LOGIN_PACKAGE, CRASH_EXCEPTION);
    return;
  } else if (account && account.password === state.password && account.delayMs > 0) {
    state.result = LOGIN_MESSAGES.pending;
    state.pending = true;
    ctx.changed();
    const user = state.username;
    // unref: a phone shut down mid-sign-in must not hold the process open.
    setTimeout(() => {
      state.pending = false;
      state.result = `Welcome, ${user}!`;
      ctx.log('I', 'PhoneleaseLogin', `login attempt user=${user} result=success`);
      ctx.changed();
    }, account.delayMs).unref();
    return;
  } else if (account && account.password === state.password) {
    state.result = `Welcome, ${state.username}!`;
    outcome = 'success';
  } else {
    state.result = LOGIN_MESSAGES.wrong;
    outcome = 'failure';
  }
  // Quote odd usernames so a typed newline cannot forge a log line.
  const user = /^[\w.@+-]*$/.test(state.username) ? state.username : JSON.stringify(state.username);
  ctx.log(
    outcome === 'success' ? 'I' : 'W',
    'PhoneleaseLogin',
    `login attempt user=${user} result=${outcome}`,
  );
  ctx.changed();
}

/** Handles a key while the login screen is in front; false lets the phone handle it. */
export function loginKey(state: LoginState, code: number, ctx: ScreenContext): boolean {
  const field = state.focus;
  if (code === KEYCODE.DEL) {
    if (!field) return true;
    const chars = [...state[field]];
    chars.pop();
    state[field] = chars.join('');
    ctx.changed();
    return true;
  }
  if (code === KEYCODE.ENTER) {
    if (field === 'username') {
      state.focus = 'password';
      ctx.changed();
    } else if (field === 'password') submitLogin(state, ctx);
    return true;
  }
  if (code === KEYCODE.TAB) {
    state.focus = field === 'username' ? 'password' : 'username';
    ctx.changed();
    return true;
  }
  return false;
}

/**
 * An editor action on the focused field (EditorInfo.IME_ACTION_*). The fields are what an
 * app's login form declares: the user name's action is next (to the password), the
 * password's is done, which the app's OnEditorActionListener takes as signing in, as it
 * takes go and send; previous goes back. Others change nothing, as TextView does with them.
 */
export function loginEditorAction(state: LoginState, action: number, ctx: ScreenContext): void {
  const field = state.focus;
  if (!field) return;
  const signsIn: number[] = [IME_ACTION.GO, IME_ACTION.SEND, IME_ACTION.DONE];
  if (action === IME_ACTION.NEXT && field === 'username') state.focus = 'password';
  else if (action === IME_ACTION.PREVIOUS && field === 'password') state.focus = 'username';
  else if (signsIn.includes(action) && field === 'password') return submitLogin(state, ctx);
  else return;
  ctx.changed();
}

/** Types into the focused field; ignored when nothing has focus (like Android). */
export function loginText(state: LoginState, text: string, ctx: ScreenContext): void {
  if (!state.focus) return;
  // A newline from `input text` acts like the Enter key in a single-line field.
  const [first, ...rest] = text.split('\n');
  state[state.focus] += first ?? '';
  ctx.changed();
  if (rest.length > 0) {
    loginKey(state, KEYCODE.ENTER, ctx);
    loginText(state, rest.join('\n'), ctx);
  }
}

function drawField(
  p: Painter,
  r: Rect,
  label: string,
  shown: string,
  password: boolean,
  focused: boolean,
  dp: number,
  body: number,
  small: number,
  colors: Palette,
): void {
  const c = p.canvas;
  const w = r.right - r.left;
  const h = r.bottom - r.top;
  const border = focused ? colors.primary : colors.outline;
  c.strokeRoundRect(r.left, r.top, w, h, 4 * dp, (focused ? 2 : 1) * dp, border);
  const valueStyle = { scale: body * 1.1, color: colors.onSurface };
  const floating = focused || shown.length > 0;
  if (floating) {
    const style = { scale: small, color: focused ? colors.primary : colors.onSurfaceVariant };
    const lw = p.fonts.measure(label, style);
    const ly = r.top - p.fonts.capHeight(style) / 2;
    c.fillRect(r.left + 12 * dp, r.top - 2 * dp, lw + 8 * dp, 4 * dp, colors.surface);
    p.fonts.draw(c, label, r.left + 16 * dp, ly, style);
  } else {
    drawLabel(p, label, rect(r.left + 16 * dp, r.top, w - 32 * dp, h), {
      scale: body * 1.1,
      color: colors.onSurfaceVariant,
    });
  }
  const inner = rect(r.left + 16 * dp, r.top, w - 32 * dp, h);
  const textW = p.fonts.measure(shown, valueStyle);
  const avail = inner.right - inner.left - 4 * dp;
  // Long text scrolls so the caret end stays visible, as in a single-line EditText.
  const x = textW > avail ? inner.left + avail - textW : inner.left;
  const top = (r.top + r.bottom - p.fonts.capHeight(valueStyle)) / 2;
  c.pushClip(inner);
  if (password) {
    // Android's password dots are bigger than a text bullet; draw them as discs.
    const pitch = 8 * dp;
    const n = [...shown].length;
    const start = n * pitch > avail ? inner.left + avail - n * pitch : inner.left;
    for (let i = 0; i < n; i++)
      c.fillCircle(start + i * pitch + pitch / 2, (r.top + r.bottom) / 2, 3 * dp, colors.onSurface);
    if (focused)
      c.fillRect(
        start + n * pitch + 2 * dp,
        top - 3 * dp,
        2 * dp,
        p.fonts.capHeight(valueStyle) + 6 * dp,
        colors.primary,
      );
    c.popClip();
    return;
  }
  p.fonts.draw(c, shown, x, top, valueStyle);
  if (focused) {
    const cx = x + textW + (shown ? 2 * dp : 0);
    c.fillRect(cx, top - 3 * dp, 2 * dp, p.fonts.capHeight(valueStyle) + 6 * dp, colors.primary);
  }
  c.popClip();
}

export function buildLogin(state: LoginState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const dp = m.dp;
  const f = new ViewFactory(LOGIN_PACKAGE, `login-${state.id}`);
  const bar = appBar(f, ctx, {
    title: ctx.label(LOGIN_PACKAGE),
    background: ctx.colors.primary,
    foreground: ctx.colors.onPrimary,
  });
  // Sideways, the heading stands beside the form (layout-land), so that the whole form
  // fits between the bars; upright, above it.
  const wide = m.width > m.height;
  const left = 24 * dp;
  const headingWidth = wide ? m.width * 0.4 - left : m.width - 2 * left;
  const formLeft = wide ? m.width * 0.42 : left;
  const width = m.width - formLeft - 24 * dp;
  const gap = wide ? 8 * dp : 24 * dp;
  let y = m.content.top + bar.height + (wide ? 16 : 32) * dp;
  const title = textView(
    f,
    'title',
    rect(left, y, headingWidth, 40 * dp),
    'Sign in',
    { scale: m.text.headline, color: ctx.colors.onSurface, bold: true },
    {
      resourceId: f.id('title'),
    },
  );
  y += 44 * dp;
  const subtitle = textView(
    f,
    'subtitle',
    rect(left, y, headingWidth, 24 * dp),
    'Use your test account to continue',
    {
      scale: m.text.body,
      color: ctx.colors.onSurfaceVariant,
    },
  );
  y = wide ? m.content.top + bar.height + gap : y + 48 * dp;

  const field = (name: LoginField, label: string, frame: Rect): ViewNode | null => {
    const value = state[name];
    const password = name === 'password';
    const shown = password ? BULLET.repeat([...value].length) : value;
    const focused = state.focus === name;
    return f.node(name, 'android.widget.EditText', frame, {
      resourceId: f.id(name),
      contentDesc: name,
      text: shown,
      hint: label,
      clickable: true,
      focusable: true,
      focused,
      longClickable: true,
      password,
      onClick: () => {
        if (state.focus !== name) {
          state.focus = name;
          ctx.changed();
        }
      },
      edit: {
        value: () => state[name],
        set: (v) => {
          state[name] = v;
          ctx.changed();
        },
      },
      paint: (p, n) =>
        drawField(p, n.frame, label, shown, password, focused, dp, m.text.body, m.text.small, ctx.colors),
    });
  };
  const username = field('username', 'Username', rect(formLeft, y, width, 56 * dp));
  y += 56 * dp + gap;
  const password = field('password', 'Password', rect(formLeft, y, width, 56 * dp));
  y += 56 * dp + (wide ? 12 : 32) * dp;
  const button = filledButton(f, ctx, 'login', rect(formLeft, y, width, 48 * dp), 'Log in', {
    resourceId: f.id('login'),
    contentDesc: 'login',
    enabled: !state.pending,
    onClick: () => submitLogin(state, ctx),
  });
  y += 48 * dp + (wide ? 4 : 24) * dp;
  const success = state.result.startsWith('Welcome');
  const result = textView(
    f,
    'result',
    rect(formLeft, y, width, 32 * dp),
    state.result,
    {
      scale: m.text.body * 1.1,
      color: success ? ctx.colors.success : ctx.colors.error,
      bold: success,
      align: 'center',
    },
    { resourceId: f.id('result') },
  );

  const root = f.root('root', 'android.widget.LinearLayout', m.content, {
    resourceId: f.id('root'),
    paint: fillFrame(ctx.colors.surface),
    children: [bar.node, title, subtitle, username, password, button, result],
  });
  return {
    content: [root],
    background: ctx.colors.surface,
    statusBar: { background: ctx.colors.primary, lightIcons: isDark(ctx.colors.primary) },
    navBar: { background: ctx.colors.surface, lightIcons: isDark(ctx.colors.surface) },
  };
}
