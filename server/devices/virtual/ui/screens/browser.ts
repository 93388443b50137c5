/**
 * Chrome's window on the phone: the toolbar with the page's address, and below it the page
 * itself, drawn from the real browser's latest screencast frame (a WebView-like node whose
 * description is the page title, so dumps and Appium see what is shown).
 */
import {
  BROWSER_ACTIVITY,
  BROWSER_PACKAGE,
  BROWSER_TOOLBAR_DP,
  pageGeometry,
} from '../../browser/browser-app.js';
import { rect } from '../raster.js';
import type { Surface } from '../raster.js';
import { COLORS, isDark } from '../theme.js';
import { ViewFactory } from '../views.js';
import { drawLabel, fillFrame } from '../widgets.js';
import type { BrowserFrame } from '../../browser/browser-app.js';
import type { BrowserState, ScreenContext, ScreenView } from './screen.js';

export const BROWSER_PACKAGE_NAME = BROWSER_PACKAGE;
export { BROWSER_ACTIVITY };

/** The address as Chrome's omnibox shows it: host and path, without the scheme. */
function displayUrl(url: string): string {
  if (!url || url === 'about:blank') return 'Search or type URL';
  return url.replace(/^https?:\/\//, '').replace(/\/$/, '');
}

/** Copies a frame into the canvas at (left, top), clipped to the area it may cover. */
function blit(
  canvas: Surface,
  frame: BrowserFrame,
  left: number,
  top: number,
  maxW: number,
  maxH: number,
): void {
  const w = Math.min(frame.width, maxW, canvas.width - left);
  const h = Math.min(frame.height, maxH, canvas.height - top);
  canvas.putPixels(frame.data, frame.width, left, top, w, h);
}

export function buildBrowser(state: BrowserState, ctx: ScreenContext): ScreenView {
  const { m } = ctx;
  const f = new ViewFactory(BROWSER_PACKAGE_NAME, `browser-${state.id}`);
  const view = ctx.browser();
  const toolbarH = Math.round(BROWSER_TOOLBAR_DP * m.dp);
  const toolbarColor = ctx.colors.surface;
  const url = view?.url ?? '';
  const text = displayUrl(url);
  const omnibox = f.node(
    'url_bar',
    'android.widget.EditText',
    rect(16 * m.dp, m.content.top + 8 * m.dp, m.width - 32 * m.dp, toolbarH - 16 * m.dp),
    {
      text,
      resourceId: `${BROWSER_PACKAGE_NAME}:id/url_bar`,
      paint: (p, n) => {
        p.canvas.fillPill(n.frame, ctx.colors.surfaceContainerHighest);
        const inner = rect(
          n.frame.left + 16 * m.dp,
          n.frame.top,
          n.frame.right - n.frame.left - 32 * m.dp,
          n.frame.bottom - n.frame.top,
        );
        drawLabel(p, text, inner, { scale: m.text.body, color: ctx.colors.onSurface });
      },
    },
  );
  const area = pageGeometry(m.content, m.dp);
  const pageFrame = rect(area.left, area.top, area.width, area.height);
  const page = f.node('page', 'android.webkit.WebView', pageFrame, {
    contentDesc: view?.title || displayUrl(url),
    resourceId: `${BROWSER_PACKAGE_NAME}:id/compositor_view_holder`,
    focusable: true,
    scrollable: true,
    // A finger on the page touches the page, at the same spot of the picture.
    onTapAt: (x, y) => view?.tap(x, y),
    // A swipe on the page is the page's: it scrolls, or a script takes the touches.
    onSwipeAt: (x1, y1, x2, y2, ms) => view?.swipe(x1, y1, x2, y2, ms),
    paint: (p, n) => {
      const frame = view?.frame() ?? null;
      if (!frame) {
        p.canvas.fillRect(
          n.frame.left,
          n.frame.top,
          n.frame.right - n.frame.left,
          n.frame.bottom - n.frame.top,
          COLORS.white,
        );
        return;
      }
      blit(
        p.canvas,
        frame,
        n.frame.left,
        n.frame.top,
        n.frame.right - n.frame.left,
        n.frame.bottom - n.frame.top,
      );
    },
  });
  const root = f.root('root', 'android.widget.FrameLayout', m.content, {
    paint: fillFrame(toolbarColor),
    children: [omnibox, page].filter((n): n is NonNullable<typeof n> => !!n),
  });
  return {
    content: [root],
    background: toolbarColor,
    statusBar: { background: toolbarColor, lightIcons: isDark(toolbarColor) },
    navBar: { background: toolbarColor, lightIcons: isDark(toolbarColor) },
  };
}
