/**
 * The system dialog the phone shows instead of an installed app it cannot run: the virtual
 * phone draws its built-in apps only, so an app whose code would have to run says so on
 * screen (and in the UI tree) rather than leaving the launcher up as if nothing happened.
 * It is drawn over the current screen, like Android's own app error dialogs, and is modal:
 * OK or BACK closes it.
 */
import { rect } from '../raster.js';
import { ViewFactory, type ViewNode } from '../views.js';
import { drawLabel, type LabelStyle } from '../widgets.js';
import type { ScreenContext } from './screen.js';

/** The app a dialog is about. */
export interface NotRunnableDialog {
  package: string;
  label: string;
}

/** The dialog's title: what the app's user sees first. */
export function notRunnableTitle(label: string): string {
  return `${label} can't run on this virtual phone`;
}

/** Its message: why, and what runs the app instead. */
export function notRunnableMessage(pkg: string): string {
  return `This virtual phone runs only its built-in apps, not the code of installed apps. Run ${pkg} on an Android emulator: phonelease doctor says how.`;
}

/** The dialog window over the whole screen; `dismiss` runs on OK. */
export function buildNotRunnableDialog(
  dialog: NotRunnableDialog,
  ctx: ScreenContext,
  dismiss: () => void,
): ViewNode {
  const { m } = ctx;
  const f = new ViewFactory('android', 'not-runnable');
  const pad = 24 * m.dp;
  const width = Math.min(m.width - 48 * m.dp, 560 * m.dp);
  const inner = width - 2 * pad;
  const title = notRunnableTitle(dialog.label);
  const message = notRunnableMessage(dialog.package);
  const titleStyle: LabelStyle = { scale: m.text.title, color: ctx.colors.onSurface, bold: true, wrap: true };
  const bodyStyle: LabelStyle = { scale: m.text.body, color: ctx.colors.onSurfaceVariant, wrap: true };
  const height = (text: string, style: LabelStyle) =>
    ctx.fonts.wrap(text, style, inner).length * ctx.fonts.lineHeight(style) * 1.15;
  const titleH = height(title, titleStyle);
  const messageH = height(message, bodyStyle);
  const buttonH = 40 * m.dp;
  const cardH = pad + titleH + 16 * m.dp + messageH + 24 * m.dp + buttonH + pad;
  const left = (m.width - width) / 2;
  const top = Math.max(m.content.top + 16 * m.dp, (m.height - cardH) / 2);
  const titleTop = top + pad;
  const messageTop = titleTop + titleH + 16 * m.dp;
  const buttonTop = messageTop + messageH + 24 * m.dp;
  const buttonW = 72 * m.dp;
  const button = f.root(
    'button1',
    'android.widget.Button',
    rect(left + width - pad - buttonW, buttonTop, buttonW, buttonH),
    {
      resourceId: 'android:id/button1',
      text: 'OK',
      clickable: true,
      focusable: true,
      onClick: dismiss,
      paint: (p, n) =>
        drawLabel(p, 'OK', n.frame, {
          scale: m.text.body * 1.1,
          color: ctx.colors.primary,
          bold: true,
          align: 'center',
        }),
    },
  );
  const card = f.root('parentPanel', 'android.widget.LinearLayout', rect(left, top, width, cardH), {
    resourceId: 'android:id/parentPanel',
    paint: (p, n) =>
      p.canvas.fillRoundRect(
        n.frame.left,
        n.frame.top,
        n.frame.right - n.frame.left,
        n.frame.bottom - n.frame.top,
        28 * m.dp,
        ctx.colors.surfaceContainerHighest,
      ),
    children: [
      f.node('alertTitle', 'android.widget.TextView', rect(left + pad, titleTop, inner, titleH), {
        resourceId: 'android:id/alertTitle',
        text: title,
        paint: (p, n) => drawLabel(p, title, n.frame, titleStyle),
      }),
      f.node('message', 'android.widget.TextView', rect(left + pad, messageTop, inner, messageH), {
        resourceId: 'android:id/message',
        text: message,
        paint: (p, n) => drawLabel(p, message, n.frame, bodyStyle),
      }),
      button,
    ],
  });
  // The scrim takes every touch outside the card: the dialog is modal.
  return f.root('scrim', 'android.widget.FrameLayout', rect(0, 0, m.width, m.height), {
    clickable: true,
    onClick: () => undefined,
    paint: (p) => p.canvas.fillRect(0, 0, m.width, m.height, 0x000000, 0.32),
    children: [card],
  });
}
