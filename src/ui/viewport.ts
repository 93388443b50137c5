/**
 * Where a view shows: the scrolling view that holds it, whether that list's edge cuts it, and
 * how much of it is in the viewport (the phone's screen). Android reports bounds already
 * clipped to the scrolling views and the window, so a row that a list's edge cuts reads
 * shorter than its siblings rather than reaching past the edge; its full height is taken
 * from its tallest sibling (rows of a list are mostly alike). scrollIntoView() and
 * toBeInViewport() share these rules.
 */
import { isVisible, type Bounds, type UiNode } from './tree.js';

/** The closest ancestor that scrolls and shows, if any. */
export function scrollableAncestor(n: UiNode): UiNode | null {
  for (let p = n.parent; p; p = p.parent) if (p.scrollable && isVisible(p)) return p;
  return null;
}

function height(n: UiNode): number {
  return n.bounds.bottom - n.bounds.top;
}

function area(b: Bounds): number {
  return Math.max(0, b.right - b.left) * Math.max(0, b.bottom - b.top);
}

/**
 * Which edge of the scrolling view `list` cuts `n`, and by how many pixels: the edge its row
 * (the list's child that holds it) touches, when that row is shorter than the list's
 * tallest row. A whole first row at the top is not cut, so no swipe pulls a
 * pull-to-refresh list.
 */
export function cutOf(n: UiNode, list: UiNode): { edge: 'top' | 'bottom'; missing: number } | null {
  let row = n;
  while (row.parent && row.parent !== list) row = row.parent;
  const tallest = Math.max(...list.children.map(height));
  if (height(row) >= tallest) return null;
  const top = row.bounds.top <= list.bounds.top;
  const bottom = row.bounds.bottom >= list.bounds.bottom;
  if (top === bottom) return null;
  return { edge: top ? 'top' : 'bottom', missing: tallest - height(row) };
}

/** How much of a view shows, and which edge of its list cuts it, if one does. */
export interface Shown {
  /** From 0 (none, or not visible) to 1 (all of it). */
  ratio: number;
  cutBy: 'top' | 'bottom' | null;
}

/**
 * How much of `n` shows on `screen`: the share of its bounds on the screen, times, when a
 * list's edge cuts its row and `n` reaches that edge, the share of `n` left once the row's
 * missing part is added back.
 */
export function shownOnScreen(n: UiNode, screen: Bounds): Shown {
  if (!isVisible(n)) return { ratio: 0, cutBy: null };
  const b = n.bounds;
  const onScreen =
    area({
      left: Math.max(b.left, screen.left),
      top: Math.max(b.top, screen.top),
      right: Math.min(b.right, screen.right),
      bottom: Math.min(b.bottom, screen.bottom),
    }) / area(b);
  const list = scrollableAncestor(n);
  const cut = list ? cutOf(n, list) : null;
  if (!list || !cut) return { ratio: onScreen, cutBy: null };
  // A title in the upper half of a row cut at the bottom shows whole: only what reaches the edge lost a part.
  const reaches = cut.edge === 'bottom' ? b.bottom >= list.bounds.bottom : b.top <= list.bounds.top;
  if (!reaches) return { ratio: onScreen, cutBy: null };
  const shown = b.bottom - b.top;
  return { ratio: (onScreen * shown) / (shown + cut.missing), cutBy: cut.edge };
}
