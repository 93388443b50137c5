/**
 * The lock screen (SystemUI's keyguard) over whatever runs: the clock and "Swipe up to
 * unlock", and, when the lock is a PIN or a password, the bouncer that asks for it. It uses
 * the resource ids of Android 14's SystemUI that tools look for: `keyguard_indication_text`,
 * `keyguard_message_area`, `pinEntry` with its `key0`..`key9` pad (each with a
 * `digit_text` child, which Appium's PIN unlock taps), `delete_button` and `key_enter`,
 * `passwordEntry`. A pattern lock shows its prompt, but drawing a pattern is not modeled.
 */
import { rect } from '../raster.js';
import { ViewFactory, type Painter, type ViewNode } from '../views.js';
import { drawLabel, fillFrame, type LabelStyle } from '../widgets.js';
import type { ScreenContext } from './screen.js';
import type { LockKind } from '../types.js';

export interface KeyguardState {
  /** The bouncer (credential entry) is up, not the lock screen's clock. */
  bouncer: boolean;
  /** What has been typed into the bouncer. */
  entry: string;
  /** The bouncer's message ("Enter your PIN", "Wrong PIN"). */
  message: string;
}

export interface KeyguardActions {
  digit(d: string): void;
  erase(): void;
  submit(): void;
}

/** The lock screen's backdrop (and its system bars'). */
export const KEYGUARD_BACKGROUND = 0x101418;

const NOUN: Record<'pin' | 'password' | 'pattern', string> = {
  pin: 'PIN',
  password: 'password',
  pattern: 'pattern',
};

/** The bouncer's first message for a lock kind. */
export function bouncerPrompt(kind: 'pin' | 'password' | 'pattern'): string {
  return kind === 'pattern' ? 'Draw your pattern' : `Enter your ${NOUN[kind]}`;
}

/** The bouncer's message after a wrong credential. */
export function wrongCredential(kind: 'pin' | 'password' | 'pattern'): string {
  return `Wrong ${NOUN[kind]}`;
}

/** The keyguard window over the whole screen: it takes every touch. */
export function buildKeyguard(
  state: KeyguardState,
  kind: Exclude<LockKind, 'none'>,
  time: string,
  ctx: ScreenContext,
  actions: KeyguardActions,
): ViewNode {
  const { m } = ctx;
  const f = new ViewFactory('com.android.systemui', 'keyguard');
  const white = 0xffffff;
  const text = (scale: number, bold = false): LabelStyle => ({ scale, color: white, bold, align: 'center' });
  const children: ViewNode[] = [];
  const add = (n: ViewNode | null) => {
    if (n) children.push(n);
  };
  const top = m.statusBar + 48 * m.dp;
  if (!state.bouncer || kind === 'swipe') {
    add(
      f.node('clock', 'android.widget.TextView', rect(0, top, m.width, 96 * m.dp), {
        resourceId: 'com.android.systemui:id/lockscreen_clock_view',
        text: time,
        paint: (p, n) => drawLabel(p, time, n.frame, text(m.text.title * 3.2)),
      }),
    );
    const hint = kind === 'swipe' ? 'Swipe up to unlock' : 'Swipe up to open';
    add(
      f.node(
        'indication',
        'android.widget.TextView',
        rect(0, m.height - m.navBar - 72 * m.dp, m.width, 32 * m.dp),
        {
          resourceId: 'com.android.systemui:id/keyguard_indication_text',
          text: hint,
          paint: (p, n) => drawLabel(p, hint, n.frame, text(m.text.body)),
        },
      ),
    );
  } else {
    add(
      f.node('message', 'android.widget.TextView', rect(0, top, m.width, 40 * m.dp), {
        resourceId: 'com.android.systemui:id/keyguard_message_area',
        text: state.message,
        paint: (p, n) => drawLabel(p, state.message, n.frame, text(m.text.body * 1.2)),
      }),
    );
    const entryTop = top + 64 * m.dp;
    const entryFrame = rect(48 * m.dp, entryTop, m.width - 96 * m.dp, 48 * m.dp);
    if (kind === 'password') {
      add(
        f.node('passwordEntry', 'android.widget.EditText', entryFrame, {
          resourceId: 'com.android.systemui:id/passwordEntry',
          text: '•'.repeat(state.entry.length),
          password: true,
          focusable: true,
          focused: true,
          clickable: true,
          onClick: () => undefined,
          paint: (p, n) => {
            p.canvas.fillRect(
              n.frame.left,
              n.frame.bottom - 2 * m.dp,
              n.frame.right - n.frame.left,
              2 * m.dp,
              white,
            );
            drawLabel(p, '•'.repeat(state.entry.length), n.frame, text(m.text.title));
          },
        }),
      );
    } else if (kind === 'pin') {
      add(
        f.node('pinEntry', 'com.android.keyguard.PasswordTextView', entryFrame, {
          resourceId: 'com.android.systemui:id/pinEntry',
          contentDesc: 'PIN area',
          paint: (p, n) => drawLabel(p, '•'.repeat(state.entry.length), n.frame, text(m.text.title * 1.4)),
        }),
      );
      // The pad: 1-9, then delete, 0, enter.
      const padTop = entryTop + 80 * m.dp;
      // Four rows between the entry and the navigation bar.
      const cell = Math.min(
        96 * m.dp,
        (m.width - 64 * m.dp) / 3,
        (m.height - m.navBar - 16 * m.dp - padTop) / 4,
      );
      const padLeft = (m.width - 3 * cell) / 2;
      const keys = ['1', '2', '3', '4', '5', '6', '7', '8', '9', 'delete', '0', 'enter'];
      keys.forEach((key, i) => {
        const frame = rect(padLeft + (i % 3) * cell, padTop + Math.floor(i / 3) * cell, cell, cell);
        const inner = rect(frame.left + 8 * m.dp, frame.top + 8 * m.dp, cell - 16 * m.dp, cell - 16 * m.dp);
        const circle = fillCircle(0xffffff, 0.18);
        if (key === 'delete' || key === 'enter') {
          const label = key === 'delete' ? 'Del' : 'OK';
          add(
            f.node(key, 'android.widget.ImageButton', inner, {
              resourceId: `com.android.systemui:id/${key === 'delete' ? 'delete_button' : 'key_enter'}`,
              contentDesc: key === 'delete' ? 'Delete' : 'Enter',
              clickable: true,
              focusable: true,
              onClick: key === 'delete' ? actions.erase : actions.submit,
              paint: (p, n) => {
                circle(p, n);
                drawLabel(p, label, n.frame, text(m.text.body, true));
              },
            }),
          );
          return;
        }
        const digit = f.node(`digit${key}`, 'android.widget.TextView', inner, {
          resourceId: 'com.android.systemui:id/digit_text',
          text: key,
          paint: (p, n) => drawLabel(p, key, n.frame, text(m.text.title * 1.3)),
        });
        add(
          f.node(`key${key}`, 'com.android.keyguard.NumPadKey', inner, {
            resourceId: `com.android.systemui:id/key${key}`,
            clickable: true,
            focusable: true,
            onClick: () => actions.digit(key),
            paint: circle,
            children: digit ? [digit] : [],
          }),
        );
      });
    } else {
      add(
        f.node(
          'lockPatternView',
          'com.android.internal.widget.LockPatternView',
          rect(0, entryTop, m.width, m.width),
          {
            resourceId: 'com.android.systemui:id/lockPatternView',
            paint: (p) => {
              const step = m.width / 4;
              for (let i = 0; i < 9; i++)
                p.canvas.fillCircle(
                  step * (1 + (i % 3)),
                  entryTop + step * (1 + Math.floor(i / 3)),
                  6 * m.dp,
                  white,
                );
            },
          },
        ),
      );
    }
  }
  return f.root('keyguard_root', 'android.widget.FrameLayout', rect(0, 0, m.width, m.height), {
    resourceId: 'com.android.systemui:id/notification_panel',
    clickable: true,
    onClick: () => undefined,
    paint: fillFrame(KEYGUARD_BACKGROUND),
    children,
  });
}

/** Paints a node as a translucent disc (the PIN pad's keys). */
function fillCircle(color: number, alpha: number): (p: Painter, n: ViewNode) => void {
  return (p, n) => {
    const r = n.frame;
    p.canvas.fillCircle((r.left + r.right) / 2, (r.top + r.bottom) / 2, (r.right - r.left) / 2, color, alpha);
  };
}
