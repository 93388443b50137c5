/**
 * What any installed app without a built-in implementation shows: its own coloured app bar
 * and a greeting, so tests that install an APK see their app come to the front.
 */
import { drawIcon } from '../icons.js';
import { rect } from '../raster.js';
import { appColor, COLORS, isDark } from '../theme.js';
import { ViewFactory } from '../views.js';
import { appBar, fillFrame, textView } from '../widgets.js';
import type { GenericState, ScreenContext, ScreenView } from './screen.js';

export function buildGeneric(state: GenericState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const f = new ViewFactory(state.package, `app-${state.id}`);
  const label = ctx.label(state.package);
  const color = appColor(state.package);
  const bar = appBar(f, ctx, { title: label, background: color, foreground: COLORS.white });
  const bodyTop = m.content.top + bar.height;
  const iconR = 40 * m.dp;
  const icon = f.node(
    'icon',
    'android.widget.ImageView',
    rect(m.width / 2 - iconR, bodyTop + 48 * m.dp, iconR * 2, iconR * 2),
    {
      resourceId: f.id('icon'),
      contentDesc: label,
      paint: (p, n) => {
        const cx = (n.frame.left + n.frame.right) / 2;
        const cy = (n.frame.top + n.frame.bottom) / 2;
        p.canvas.fillCircle(cx, cy, iconR, color);
        drawIcon(p.canvas, 'android', cx, cy, 48 * m.dp, COLORS.white, color);
      },
    },
  );
  const textTop = bodyTop + 48 * m.dp + iconR * 2 + 24 * m.dp;
  const hello = textView(
    f,
    'hello',
    rect(24 * m.dp, textTop, m.width - 48 * m.dp, 40 * m.dp),
    `Hello from ${label}`,
    { scale: m.text.title, color: ctx.colors.onSurface, align: 'center' },
    { resourceId: f.id('hello') },
  );
  const note = textView(
    f,
    'package',
    rect(24 * m.dp, textTop + 44 * m.dp, m.width - 48 * m.dp, 24 * m.dp),
    state.package,
    { scale: m.text.body, color: ctx.colors.onSurfaceVariant, align: 'center' },
  );
  const root = f.root('root', 'android.widget.LinearLayout', m.content, {
    paint: fillFrame(ctx.colors.surface),
    children: [bar.node, icon, hello, note],
  });
  return {
    content: [root],
    background: ctx.colors.surface,
    statusBar: { background: color, lightIcons: isDark(color) },
    navBar: { background: ctx.colors.surface, lightIcons: isDark(ctx.colors.surface) },
  };
}
