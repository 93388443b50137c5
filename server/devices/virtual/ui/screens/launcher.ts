/**
 * The home screen (Launcher3): wallpaper, a date line, and a grid of round app icons with
 * labels for every launcher app in install order. The grid scrolls when apps overflow.
 * Holding an icon opens its menu (Launcher3's popup) with "App info".
 */
import { drawIcon, type IconName } from '../icons.js';
import { rect, type Rect } from '../raster.js';
import { appColor, COLORS } from '../theme.js';
import { drawLabel } from '../widgets.js';
import type { ViewNode } from '../views.js';
import { ViewFactory } from '../views.js';
import type { LauncherState, ScreenContext, ScreenView } from './screen.js';

export const LAUNCHER_PACKAGE = 'com.android.launcher3';
export const LAUNCHER_ACTIVITY = 'com.android.launcher3.Launcher';

const COLUMNS = 4;
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Built-in apps get a symbol; others show their initial. */
function appGlyph(pkg: string): IconName | null {
  if (pkg === 'com.android.settings') return 'gear';
  if (pkg === 'com.phonelease.login') return 'lock';
  return null;
}

interface GridLayout {
  top: number;
  bottom: number;
  cellW: number;
  cellH: number;
  left: number;
  rows: number;
  maxScroll: number;
}

function gridLayout(ctx: ScreenContext, count: number): GridLayout {
  const { m } = ctx;
  const top = m.content.top + 120 * m.dp;
  const bottom = m.content.bottom - 8 * m.dp;
  const left = 8 * m.dp;
  const cellW = (m.width - 2 * left) / COLUMNS;
  const cellH = 104 * m.dp;
  const rows = Math.ceil(count / COLUMNS);
  return { top, bottom, cellW, cellH, left, rows, maxScroll: Math.max(0, rows * cellH - (bottom - top)) };
}

export function buildLauncher(state: LauncherState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const f = new ViewFactory(LAUNCHER_PACKAGE, `launcher-${state.id}`);
  const apps = ctx.apps();
  const g = gridLayout(ctx, apps.length);
  state.scroll = Math.max(0, Math.min(state.scroll, g.maxScroll));
  const now = ctx.now();
  const date = `${DAYS[now.getDay()] ?? ''}, ${MONTHS[now.getMonth()] ?? ''} ${now.getDate()}`;

  const viewport = rect(0, g.top, m.width, g.bottom - g.top);
  const icons = f.within(viewport, () =>
    apps.map((app, i) => {
      const col = i % COLUMNS;
      const row = Math.floor(i / COLUMNS);
      const cell = rect(g.left + col * g.cellW, g.top + row * g.cellH - state.scroll, g.cellW, g.cellH);
      const glyph = appGlyph(app.package);
      const color = appColor(app.package);
      const iconR = 28 * m.dp;
      return f.node(`app/${app.package}`, 'android.widget.TextView', cell, {
        text: app.label,
        contentDesc: app.label,
        clickable: true,
        focusable: true,
        longClickable: true,
        onClick: () => {
          // While a menu is open, a tap anywhere else closes it and does nothing more.
          if (state.menu) closeMenu(state, ctx);
          else ctx.launch(app.package);
        },
        onLongClick: () => {
          state.menu = app.package;
          ctx.changed();
        },
        paint: (p, n) => {
          const r = n.frame;
          const cx = (r.left + r.right) / 2;
          const cy = r.top + 8 * m.dp + iconR;
          p.canvas.fillCircle(cx, cy + 1.5 * m.dp, iconR, 0x000000, 0.18);
          p.canvas.fillCircle(cx, cy, iconR, color);
          if (glyph) drawIcon(p.canvas, glyph, cx, cy, 32 * m.dp, COLORS.white, color);
          else {
            const initial = (app.label.trim()[0] ?? app.package[0] ?? '?').toUpperCase();
            drawLabel(p, initial, rect(cx - iconR, cy - iconR, iconR * 2, iconR * 2), {
              scale: m.text.display,
              color: COLORS.white,
              bold: true,
              align: 'center',
            });
          }
          const labelFrame = rect(
            r.left + 4 * m.dp,
            cy + iconR + 6 * m.dp,
            r.right - r.left - 8 * m.dp,
            20 * m.dp,
          );
          const shadow = {
            left: labelFrame.left + m.dp / 2,
            top: labelFrame.top + m.dp / 2,
            right: labelFrame.right + m.dp / 2,
            bottom: labelFrame.bottom + m.dp / 2,
          };
          drawLabel(p, app.label, shadow, {
            scale: m.text.body * 0.9,
            color: 0x000000,
            alpha: 0.45,
            align: 'center',
          });
          drawLabel(p, app.label, labelFrame, {
            scale: m.text.body * 0.9,
            color: COLORS.white,
            align: 'center',
          });
        },
      });
    }),
  );

  const workspace = f.root('workspace', 'android.view.ViewGroup', viewport, {
    resourceId: 'com.android.launcher3:id/workspace',
    scrollable: g.maxScroll > 0,
    clipChildren: true,
    onScroll: (dy) => {
      const next = Math.max(0, Math.min(g.maxScroll, state.scroll + dy));
      if (next !== state.scroll) {
        state.scroll = next;
        ctx.changed();
      }
    },
    children: icons,
  });

  const glance = f.node(
    'glance',
    'android.widget.TextView',
    rect(24 * m.dp, m.content.top + 32 * m.dp, m.width - 48 * m.dp, 40 * m.dp),
    {
      resourceId: 'com.android.launcher3:id/date',
      text: date,
      paint: (p, n) => {
        const shadow = {
          ...n.frame,
          left: n.frame.left + m.dp,
          right: n.frame.right + m.dp,
          top: n.frame.top + m.dp,
          bottom: n.frame.bottom + m.dp,
        };
        drawLabel(p, date, shadow, { scale: m.text.headline, color: 0x000000, alpha: 0.35 });
        drawLabel(p, date, n.frame, { scale: m.text.headline, color: COLORS.white });
      },
    },
  );

  const menuAt = state.menu ? apps.findIndex((a) => a.package === state.menu) : -1;
  const menuCell =
    menuAt < 0
      ? null
      : rect(
          g.left + (menuAt % COLUMNS) * g.cellW,
          g.top + Math.floor(menuAt / COLUMNS) * g.cellH - state.scroll,
          g.cellW,
          g.cellH,
        );
  if (state.menu && !menuCell) state.menu = undefined;
  const root: ViewNode = f.root('launcher', 'android.widget.FrameLayout', m.content, {
    resourceId: 'com.android.launcher3:id/launcher',
    children: [glance, workspace, menuCell && state.menu ? iconMenu(f, ctx, state, menuCell) : null],
  });
  return {
    content: [root],
    background: COLORS.wallpaperTop,
    statusBar: { background: COLORS.wallpaperTop, lightIcons: true },
    navBar: { background: COLORS.wallpaperBottom, lightIcons: true },
    edgeToEdge: true,
  };
}

function closeMenu(state: LauncherState, ctx: ScreenContext): void {
  state.menu = undefined;
  ctx.changed();
}

/** The popup under (or, near the bottom, over) a held icon: one item, "App info". */
function iconMenu(f: ViewFactory, ctx: ScreenContext, state: LauncherState, cell: Rect): ViewNode | null {
  const { m } = ctx;
  const pkg = state.menu ?? '';
  const width = 200 * m.dp;
  const height = 56 * m.dp;
  const left = Math.max(8 * m.dp, Math.min(m.width - width - 8 * m.dp, (cell.left + cell.right - width) / 2));
  const below = cell.bottom + 4 * m.dp;
  const top = below + height > m.content.bottom ? cell.top - height - 4 * m.dp : below;
  const frame = rect(left, top, width, height);
  const colors = ctx.colors;
  return f.node('popup', 'android.widget.LinearLayout', frame, {
    resourceId: 'com.android.launcher3:id/popup_container',
    paint: (p, n) => {
      const r = n.frame;
      p.canvas.fillRoundRect(
        r.left,
        r.top + m.dp,
        r.right - r.left,
        r.bottom - r.top,
        16 * m.dp,
        0x000000,
        0.2,
      );
      p.canvas.fillRoundRect(r.left, r.top, r.right - r.left, r.bottom - r.top, 16 * m.dp, colors.surface);
    },
    children: [
      f.node('popup/app_info', 'android.widget.TextView', frame, {
        resourceId: 'com.android.launcher3:id/bubble_text',
        text: 'App info',
        contentDesc: 'App info',
        clickable: true,
        focusable: true,
        onClick: () => {
          state.menu = undefined;
          ctx.showAppInfo(pkg);
        },
        paint: (p, n) => {
          const r = n.frame;
          const cy = (r.top + r.bottom) / 2;
          drawIcon(
            p.canvas,
            'info',
            r.left + 28 * m.dp,
            cy,
            22 * m.dp,
            colors.onSurfaceVariant,
            colors.surface,
          );
          drawLabel(
            p,
            'App info',
            rect(r.left + 52 * m.dp, r.top, r.right - r.left - 64 * m.dp, r.bottom - r.top),
            {
              scale: m.text.body,
              color: colors.onSurface,
            },
          );
        },
      }),
    ],
  });
}
