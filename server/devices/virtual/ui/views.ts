/**
 * The view tree: one model per screen from which the phone is drawn, hit-tested, dumped
 * (`uiautomator dump`) and served to the UiAutomator2 server. Screens build a fresh tree
 * from their state after every change; node keys stay the same across rebuilds for as long
 * as the view they stand for exists, so element handles survive redraws.
 */
import type { TextRenderer } from './font.js';
import type { Rect, Surface } from './raster.js';
import { intersect, isEmptyRect } from './raster.js';
import { PLAIN_VIEW } from './types.js';

export interface Painter {
  canvas: Surface;
  fonts: TextRenderer;
}

export interface ViewNode {
  /** Stable identity: screen instance + name. */
  key: string;
  className: string;
  packageName: string;
  resourceId: string;
  text: string;
  contentDesc: string;
  /** Shown in an empty field; reported as `hint` by the UiAutomator2 source. */
  hint: string;
  /** Where the view is laid out (may extend past a scroll viewport); used for painting. */
  frame: Rect;
  /** The visible part of frame, as Android reports it. */
  bounds: Rect;
  checkable: boolean;
  checked: boolean;
  clickable: boolean;
  enabled: boolean;
  focusable: boolean;
  focused: boolean;
  scrollable: boolean;
  longClickable: boolean;
  password: boolean;
  selected: boolean;
  children: ViewNode[];
  /** Draws the node itself (its children are drawn after it, on top). */
  paint?: (p: Painter, node: ViewNode) => void;
  /** Clip the children's painting to this node's bounds (scroll containers). */
  clipChildren?: boolean;
  onClick?: () => void;
  /**
   * Views that take the touch where it lands (Chrome's page): a tap at (x, y) in screen
   * pixels from the view's top-left corner.
   */
  onTapAt?: (x: number, y: number) => void;
  /** The same views: a finger moved from (x1, y1) to (x2, y2) in `durationMs`, from the view's top-left. */
  onSwipeAt?: (x1: number, y1: number, x2: number, y2: number, durationMs: number) => void;
  /** Long-clickable views: what holding a finger on the view does. */
  onLongClick?: () => void;
  /** Scroll containers: scrolls content by dy pixels (positive = towards the end). */
  onScroll?: (dy: number) => void;
  /** Text fields: the real value (password fields show dots in `text`). */
  edit?: { value: () => string; set: (value: string) => void };
}

export type NodeProps = Partial<Omit<ViewNode, 'key' | 'className' | 'frame' | 'bounds' | 'children'>> & {
  children?: Array<ViewNode | null | undefined | false>;
};

/**
 * Creates nodes for one screen instance: fills defaults, prefixes keys, and clips bounds to
 * the viewport stack so views scrolled out of sight drop out of the tree.
 */
export class ViewFactory {
  private viewports: Rect[] = [];

  constructor(
    readonly packageName: string,
    private readonly keyPrefix: string,
  ) {}

  /** Runs build with r as the visible region (a scroll viewport). */
  within<T>(r: Rect, build: () => T): T {
    const outer = this.viewports[this.viewports.length - 1];
    this.viewports.push(outer ? intersect(outer, r) : r);
    try {
      return build();
    } finally {
      this.viewports.pop();
    }
  }

  /** A node, or null when it lies wholly outside the current viewport. */
  node(name: string, className: string, frame: Rect, props: NodeProps = {}): ViewNode | null {
    const viewport = this.viewports[this.viewports.length - 1];
    const bounds = viewport ? intersect(viewport, frame) : frame;
    if (viewport && isEmptyRect(bounds)) return null;
    const { children, ...rest } = props;
    return {
      key: `${this.keyPrefix}/${name}`,
      className,
      packageName: this.packageName,
      ...PLAIN_VIEW,
      ...rest,
      frame,
      bounds: roundRect(bounds),
      children: (children ?? []).filter((c): c is ViewNode => !!c),
    };
  }

  /** Like node() but never null (for containers known to be on screen). */
  root(name: string, className: string, frame: Rect, props: NodeProps = {}): ViewNode {
    const n = this.node(name, className, frame, props);
    if (!n) throw new Error(`view ${name} is off screen`);
    return n;
  }

  /** A full resource id in this app's namespace. */
  id(name: string): string {
    return `${this.packageName}:id/${name}`;
  }
}

function roundRect(r: Rect): Rect {
  return {
    left: Math.round(r.left),
    top: Math.round(r.top),
    right: Math.round(r.right),
    bottom: Math.round(r.bottom),
  };
}

export function contains(r: Rect, x: number, y: number): boolean {
  return x >= r.left && x < r.right && y >= r.top && y < r.bottom;
}

/** Depth-first, parents before children. */
export function* walk(node: ViewNode): Generator<ViewNode> {
  yield node;
  for (const c of node.children) yield* walk(c);
}

export function findByKey(root: ViewNode, key: string): ViewNode | undefined {
  for (const n of walk(root)) if (n.key === key) return n;
  return undefined;
}

/** The innermost node at (x, y) that satisfies pred; later siblings are on top. */
export function hitTest(
  node: ViewNode,
  x: number,
  y: number,
  pred: (n: ViewNode) => boolean,
): ViewNode | undefined {
  if (!contains(node.bounds, x, y)) return undefined;
  for (let i = node.children.length - 1; i >= 0; i--) {
    const child = node.children[i];
    const hit = child && hitTest(child, x, y, pred);
    if (hit) return hit;
  }
  return pred(node) ? node : undefined;
}

/** Paints a tree: each node, then its children (clipped when asked). */
export function paintTree(p: Painter, node: ViewNode): void {
  node.paint?.(p, node);
  if (node.children.length === 0) return;
  if (node.clipChildren) p.canvas.pushClip(node.bounds);
  for (const c of node.children) paintTree(p, c);
  if (node.clipChildren) p.canvas.popClip();
}
