/**
 * `uiautomator dump` output: the XML that `adb shell uiautomator dump` writes, generated
 * from the same view tree the screen is drawn from.
 */
import type { UiNodeInfo } from './types.js';

const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

// eslint-disable-next-line no-control-regex
const NOT_IN_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

/**
 * Escapes text for an XML attribute. Characters XML 1.0 cannot carry at all (most C0
 * controls) are dropped, as Android's serializer cannot write them either.
 */
export function xmlEscape(value: string): string {
  return value
    .replace(NOT_IN_XML, '')
    .replace(/[&<>"']|[\n\r\t]/g, (ch) => XML_ESCAPES[ch] ?? `&#${ch.charCodeAt(0)};`);
}

export function formatBounds(b: UiNodeInfo['bounds']): string {
  return `[${b.left},${b.top}][${b.right},${b.bottom}]`;
}

function dumpNode(n: UiNodeInfo, index: number, out: string[]): void {
  out.push(
    `<node index="${index}" text="${xmlEscape(n.text)}" resource-id="${xmlEscape(n.resourceId)}" class="${xmlEscape(n.className)}"` +
      ` package="${xmlEscape(n.packageName)}" content-desc="${xmlEscape(n.contentDesc)}" checkable="${n.checkable}"` +
      ` checked="${n.checked}" clickable="${n.clickable}" enabled="${n.enabled}" focusable="${n.focusable}"` +
      ` focused="${n.focused}" scrollable="${n.scrollable}" long-clickable="${n.longClickable}" password="${n.password}"` +
      ` selected="${n.selected}" bounds="${formatBounds(n.bounds)}"`,
  );
  if (n.children.length === 0) {
    out.push(' />');
    return;
  }
  out.push('>');
  n.children.forEach((c, i) => dumpNode(c, i, out));
  out.push('</node>');
}

/** The whole dump, one line like the real tool writes it. */
export function dumpUiAutomator(root: UiNodeInfo, rotation = 0): string {
  const out: string[] = [
    `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="${rotation}">`,
  ];
  dumpNode(root, 0, out);
  out.push('</hierarchy>');
  return out.join('');
}

/** Views that are TextViews (and so important for accessibility, with or without text). */
const TEXT_VIEWS = new Set([
  'android.widget.TextView',
  'android.widget.EditText',
  'android.widget.Button',
  'android.widget.CheckBox',
  'android.widget.RadioButton',
  'android.widget.Switch',
  'android.widget.ToggleButton',
  'android.widget.CheckedTextView',
]);

/**
 * Whether a view is important for accessibility with the default `auto`
 * (View.isImportantForAccessibility): one that can be acted on (clicked, long-clicked,
 * focused, scrolled, checked), a TextView, or one with a content description. Layouts that
 * only hold others are not.
 */
function importantForAccessibility(n: UiNodeInfo): boolean {
  return (
    n.clickable ||
    n.longClickable ||
    n.focusable ||
    n.scrollable ||
    n.checkable ||
    n.contentDesc !== '' ||
    n.text !== '' ||
    TEXT_VIEWS.has(n.className)
  );
}

/**
 * The tree accessibility reports without FLAG_INCLUDE_NOT_IMPORTANT_VIEWS (`uiautomator dump
 * --compressed`, the UiAutomator2 server's `ignoreUnimportantViews`): views that are not
 * important are left out and their children take their place; the window's root stays.
 */
export function compressedTree(root: UiNodeInfo): UiNodeInfo {
  const important = (n: UiNodeInfo): UiNodeInfo[] => {
    const children = n.children.flatMap(important);
    return importantForAccessibility(n) ? [{ ...n, children }] : children;
  };
  return { ...root, children: root.children.flatMap(important) };
}
