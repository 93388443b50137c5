/**
 * Material-style building blocks shared by the screens: text views, app bars, list rows,
 * switches and buttons. Each returns view nodes whose paint draws them, so what is drawn
 * and what the hierarchy lists come from the same place.
 */
import type { TextStyle } from './font.js';
import { drawIcon, type IconName } from './icons.js';
import type { Color, Rect } from './raster.js';
import { rect } from './raster.js';
import type { ScreenContext } from './screens/screen.js';
import { COLORS, type Palette } from './theme.js';
import type { NodeProps, Painter, ViewFactory, ViewNode } from './views.js';

export interface LabelStyle extends TextStyle {
  align?: 'left' | 'center' | 'right';
  /** Wrap onto several lines (top-aligned) instead of one centred, ellipsized line. */
  wrap?: boolean;
}

/** Draws text inside r: one line vertically centred on its cap height, or wrapped lines. */
export function drawLabel(p: Painter, text: string, r: Rect, style: LabelStyle): void {
  const width = r.right - r.left;
  const lines = style.wrap ? p.fonts.wrap(text, style, width) : [p.fonts.ellipsize(text, style, width)];
  const lineH = p.fonts.lineHeight(style) * 1.15;
  const cap = p.fonts.capHeight(style);
  let top = style.wrap ? r.top : (r.top + r.bottom - cap) / 2;
  for (const line of lines) {
    const w = p.fonts.measure(line, style);
    const x =
      style.align === 'center' ? (r.left + r.right - w) / 2 : style.align === 'right' ? r.right - w : r.left;
    p.fonts.draw(p.canvas, line, x, top, style);
    top += lineH;
  }
}

export function textView(
  f: ViewFactory,
  name: string,
  frame: Rect,
  text: string,
  style: LabelStyle,
  props: NodeProps = {},
): ViewNode | null {
  return f.node(name, 'android.widget.TextView', frame, {
    text,
    ...props,
    paint: (p, n) => drawLabel(p, text, n.frame, style),
  });
}

export interface AppBarOptions {
  title: string;
  background: Color;
  foreground: Color;
  /** Shows a "Navigate up" arrow that calls this. */
  onBack?: () => void;
  /** Taller bar with a larger title, like the Settings home page. */
  large?: boolean;
}

/** A toolbar at the top of the content area. Returns the node and its height. */
export function appBar(
  f: ViewFactory,
  ctx: ScreenContext,
  o: AppBarOptions,
): { node: ViewNode; height: number } {
  const { m } = ctx;
  // Sideways there is no room for a large bar: it is drawn as the plain one.
  const large = o.large && m.height > m.width;
  const height = (large ? 112 : 64) * m.dp;
  const frame = rect(0, m.content.top, m.width, height);
  const titleLeft = (o.onBack ? 72 : 24) * m.dp;
  const titleStyle: LabelStyle = { scale: large ? m.text.display : m.text.title, color: o.foreground };
  const titleFrame = large
    ? rect(titleLeft, frame.top + 40 * m.dp, m.width - titleLeft - 16 * m.dp, 48 * m.dp)
    : rect(titleLeft, frame.top, m.width - titleLeft - 16 * m.dp, height);
  const back =
    o.onBack &&
    f.node(
      'toolbar/up',
      'android.widget.ImageButton',
      rect(4 * m.dp, frame.top + 8 * m.dp, 48 * m.dp, 48 * m.dp),
      {
        contentDesc: 'Navigate up',
        clickable: true,
        focusable: true,
        onClick: o.onBack,
        paint: (p, n) =>
          drawIcon(
            p.canvas,
            'back',
            (n.frame.left + n.frame.right) / 2,
            (n.frame.top + n.frame.bottom) / 2,
            24 * m.dp,
            o.foreground,
            o.background,
          ),
      },
    );
  const node = f.root('toolbar', 'android.view.ViewGroup', frame, {
    resourceId: f.id('toolbar'),
    paint: (p, n) =>
      p.canvas.fillRect(
        n.frame.left,
        n.frame.top,
        n.frame.right - n.frame.left,
        n.frame.bottom - n.frame.top,
        o.background,
      ),
    children: [back, textView(f, 'toolbar/title', titleFrame, o.title, titleStyle)],
  });
  return { node, height };
}

/** Material 3 switch track and thumb, vertically centred in r, right-aligned. */
export function drawSwitch(p: Painter, r: Rect, on: boolean, dp: number, colors: Palette): void {
  const w = 52 * dp;
  const h = 32 * dp;
  const x = r.right - w;
  const y = (r.top + r.bottom - h) / 2;
  const c = p.canvas;
  if (on) {
    c.fillRoundRect(x, y, w, h, h / 2, colors.primary);
    c.fillCircle(x + w - h / 2, y + h / 2, 12 * dp, colors.onPrimary);
  } else {
    c.fillRoundRect(x, y, w, h, h / 2, colors.surfaceContainerHighest);
    c.strokeRoundRect(x, y, w, h, h / 2, 2 * dp, colors.outline);
    c.fillCircle(x + h / 2, y + h / 2, 8 * dp, colors.outline);
  }
}

export interface RowOptions {
  title: string;
  summary?: string;
  icon?: IconName;
  /** Background of the round icon badge; plain icon when absent. */
  iconBadge?: Color;
  onClick?: () => void;
  /** Adds a switch widget reflecting this value. */
  toggle?: boolean;
}

/**
 * A two-line list row (title, summary) with an optional leading icon and trailing switch:
 * a LinearLayout holding android:id/title and android:id/summary TextViews, like the
 * Settings app's preference rows.
 */
export function listRow(
  f: ViewFactory,
  ctx: ScreenContext,
  name: string,
  frame: Rect,
  o: RowOptions,
): ViewNode | null {
  const { m } = ctx;
  const pad = 24 * m.dp;
  const iconSize = 40 * m.dp;
  const textLeft = o.icon ? frame.left + pad + iconSize + 16 * m.dp : frame.left + pad;
  const trailingW = o.toggle !== undefined ? 52 * m.dp + 16 * m.dp : 0;
  const textRight = frame.right - pad - trailingW;
  const titleStyle: LabelStyle = { scale: m.text.body * 1.1, color: ctx.colors.onSurface };
  const summaryStyle: LabelStyle = { scale: m.text.body * 0.9, color: ctx.colors.onSurfaceVariant };
  const midY = (frame.top + frame.bottom) / 2;
  const lineGap = 2 * m.dp;
  const titleH = 20 * m.dp;
  const summaryH = 18 * m.dp;
  const titleFrame = o.summary
    ? rect(textLeft, midY - lineGap / 2 - titleH, textRight - textLeft, titleH)
    : rect(textLeft, midY - titleH / 2, textRight - textLeft, titleH);
  const summaryFrame = rect(textLeft, midY + lineGap / 2, textRight - textLeft, summaryH);
  const iconCx = frame.left + pad + iconSize / 2;
  return f.node(name, 'android.widget.LinearLayout', frame, {
    clickable: !!o.onClick,
    focusable: !!o.onClick,
    onClick: o.onClick,
    paint: o.icon
      ? (p) => {
          const icon = o.icon;
          if (!icon) return;
          if (o.iconBadge !== undefined) {
            p.canvas.fillCircle(iconCx, midY, iconSize / 2, o.iconBadge);
            drawIcon(p.canvas, icon, iconCx, midY, 22 * m.dp, COLORS.white, o.iconBadge);
          } else {
            drawIcon(
              p.canvas,
              icon,
              iconCx,
              midY,
              24 * m.dp,
              ctx.colors.onSurfaceVariant,
              ctx.colors.surface,
            );
          }
        }
      : undefined,
    children: [
      f.node(
        `${name}/text`,
        'android.widget.RelativeLayout',
        rect(textLeft, frame.top, textRight - textLeft, frame.bottom - frame.top),
        {
          children: [
            textView(f, `${name}/title`, titleFrame, o.title, titleStyle, { resourceId: 'android:id/title' }),
            o.summary
              ? textView(f, `${name}/summary`, summaryFrame, o.summary, summaryStyle, {
                  resourceId: 'android:id/summary',
                })
              : null,
          ],
        },
      ),
      o.toggle !== undefined
        ? f.node(
            `${name}/switch`,
            'android.widget.Switch',
            rect(frame.right - pad - 52 * m.dp, frame.top, 52 * m.dp, frame.bottom - frame.top),
            {
              resourceId: 'android:id/switch_widget',
              text: o.toggle ? 'ON' : 'OFF',
              checkable: true,
              checked: o.toggle,
              paint: (p, n) => drawSwitch(p, n.frame, !!o.toggle, m.dp, ctx.colors),
            },
          )
        : null,
    ],
  });
}

/** A filled pill button (android.widget.Button). */
export function filledButton(
  f: ViewFactory,
  ctx: ScreenContext,
  name: string,
  frame: Rect,
  label: string,
  props: NodeProps & { color?: Color },
): ViewNode | null {
  const { m } = ctx;
  const color = props.color ?? ctx.colors.primary;
  return f.node(name, 'android.widget.Button', frame, {
    text: label,
    clickable: true,
    focusable: true,
    ...props,
    paint: (p, n) => {
      const r = n.frame;
      p.canvas.fillPill(r, color);
      drawLabel(p, label, r, {
        scale: m.text.body * 1.1,
        color: ctx.colors.onPrimary,
        bold: true,
        align: 'center',
      });
    },
  });
}

/** Fills a node's frame with a colour (backgrounds). */
export function fillFrame(color: Color): (p: Painter, n: ViewNode) => void {
  return (p, n) =>
    p.canvas.fillRect(
      n.frame.left,
      n.frame.top,
      n.frame.right - n.frame.left,
      n.frame.bottom - n.frame.top,
      color,
    );
}
