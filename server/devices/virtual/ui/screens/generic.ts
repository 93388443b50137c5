/**
 * What any installed app without a built-in implementation shows: its own coloured app bar
 * and a greeting, so tests that install an APK see their app come to the front.
 */
import { rect } from '../raster.js';
import { appColor, COLORS } from '../theme.js';
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
  const hello = textView(
    f,
    'hello',
    rect(24 * m.dp, bodyTop + 48 * m.dp, m.width - 48 * m.dp, 40 * m.dp),
    `Hello from ${label}`,
    { scale: m.text.title, color: COLORS.onSurface, align: 'center' },
    { resourceId: f.id('hello') },
  );
  const note = textView(
    f,
    'package',
    rect(24 * m.dp, bodyTop + 92 * m.dp, m.width - 48 * m.dp, 24 * m.dp),
    state.package,
    { scale: m.text.body, color: COLORS.onSurfaceVariant, align: 'center' },
  );
  const root = f.root('root', 'android.widget.LinearLayout', m.content, {
    paint: fillFrame(COLORS.surface),
    children: [bar.node, hello, note],
  });
  return {
    content: [root],
    background: COLORS.surface,
    statusBar: { background: color, lightIcons: true },
    navBar: { background: COLORS.surface, lightIcons: false },
  };
}
