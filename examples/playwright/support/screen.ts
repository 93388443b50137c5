/**
 * Reading and driving the screen through ADB, the way you would on any Android device:
 * `uiautomator dump` for what is on screen, `input` for taps and text.
 */
import type { Lease } from 'phonelease/playwright';

export interface UiNode {
  text: string;
  resourceId: string;
  contentDesc: string;
  className: string;
  packageName: string;
  bounds: { left: number; top: number; right: number; bottom: number };
}

const ATTR = (name: string) => new RegExp(`\\b${name}="([^"]*)"`);
const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** Every node of the current screen, from `uiautomator dump`. */
export async function dumpScreen(phone: Lease): Promise<UiNode[]> {
  const { stdout, exitCode } = await phone.shell(
    'uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml',
  );
  if (exitCode !== 0) throw new Error(`uiautomator dump failed (exit ${exitCode})`);
  return [...stdout.matchAll(/<node\b[^>]*>/g)].map(([tag]) => {
    const attr = (name: string) => unescape(ATTR(name).exec(tag)?.[1] ?? '');
    const [left = 0, top = 0, right = 0, bottom = 0] = (attr('bounds').match(/\d+/g) ?? []).map(Number);
    return {
      text: attr('text'),
      resourceId: attr('resource-id'),
      contentDesc: attr('content-desc'),
      className: attr('class'),
      packageName: attr('package'),
      bounds: { left, top, right, bottom },
    };
  });
}

/** The node with this resource id (e.g. `com.phonelease.login:id/username`), or an error that lists what is there. */
export async function findById(phone: Lease, resourceId: string): Promise<UiNode> {
  const nodes = await dumpScreen(phone);
  const node = nodes.find((n) => n.resourceId === resourceId);
  if (!node) {
    const ids = nodes.map((n) => n.resourceId).filter(Boolean);
    throw new Error(
      `no view with resource-id ${resourceId} on screen; ids present: ${ids.join(', ') || 'none'}`,
    );
  }
  return node;
}

/** Taps the centre of a view. */
export async function tap(phone: Lease, node: UiNode): Promise<void> {
  const x = Math.round((node.bounds.left + node.bounds.right) / 2);
  const y = Math.round((node.bounds.top + node.bounds.bottom) / 2);
  await phone.shell(`input tap ${x} ${y}`);
}

/** Types text into the focused field (`input text` needs spaces as %s). */
export async function type(phone: Lease, text: string): Promise<void> {
  await phone.shell(`input text '${text.replace(/ /g, '%s').replace(/'/g, `'\\''`)}'`);
}
