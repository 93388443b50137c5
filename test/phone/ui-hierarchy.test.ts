import { describe, expect, it } from 'vitest';
import { dumpUiAutomator, xmlEscape } from '../../server/devices/virtual/ui/hierarchy.js';
import { createPhoneUi } from '../../server/devices/virtual/ui/index.js';
import type { LauncherApp, PhoneUiHost, UiNodeInfo } from '../../server/devices/virtual/ui/types.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

function makeUi(apps: LauncherApp[]) {
  const host: PhoneUiHost = { launcherApps: () => apps, log: () => undefined, setting: () => null };
  return createPhoneUi(host, {
    width: 720,
    height: 1280,
    density: 320,
    identity: DEVICE,
    now: () => new Date(2025, 0, 6, 9, 41),
  });
}

const APPS: LauncherApp[] = [
  { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
  { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
];

describe('uiautomator dump format', () => {
  it('starts like the real tool and lists attributes in its order', () => {
    const dump = makeUi(APPS).dumpHierarchy();
    expect(
      dump.startsWith(
        `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.launcher3" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][720,1280]">`,
      ),
    ).toBe(true);
    expect(dump.endsWith('</node></hierarchy>')).toBe(true);
    expect(dump).not.toContain('\n');
  });

  it('self-closes leaves and balances every other node', () => {
    const dump = makeUi(APPS).dumpHierarchy();
    const opens = dump.match(/<node [^>]*[^/]>/g)?.length ?? 0;
    const closes = dump.match(/<\/node>/g)?.length ?? 0;
    const leaves = dump.match(/<node [^>]* \/>/g)?.length ?? 0;
    expect(opens).toBe(closes);
    expect(leaves).toBeGreaterThan(0);
  });

  it('escapes text from apps', () => {
    const ui = makeUi([
      ...APPS,
      { package: 'com.example.odd', label: `Tom & "Jerry" <3 'x'`, activity: 'com.example.odd.Main' },
    ]);
    const dump = ui.dumpHierarchy();
    expect(dump).toContain('text="Tom &amp; &quot;Jerry&quot; &lt;3 &apos;x&apos;"');
    expect(() => ui.renderPng()).not.toThrow();
    ui.launch('com.example.odd');
    expect(ui.dumpHierarchy()).toContain(
      'text="Tom &amp; &quot;Jerry&quot; &lt;3 &apos;x&apos; can&apos;t run on this virtual phone"',
    );
  });

  it('drops characters XML cannot carry and encodes line breaks', () => {
    expect(xmlEscape('a\u0001b\nc')).toBe('ab&#10;c');
  });

  it('keeps every node inside its parent and indexes siblings from 0', () => {
    const ui = makeUi(APPS);
    ui.launch('com.android.settings');
    const root = ui.viewTree?.();
    if (!root) throw new Error('no tree');
    const check = (n: UiNodeInfo) => {
      for (const c of n.children) {
        expect(c.bounds.left).toBeGreaterThanOrEqual(n.bounds.left);
        expect(c.bounds.top).toBeGreaterThanOrEqual(n.bounds.top);
        expect(c.bounds.right).toBeLessThanOrEqual(n.bounds.right);
        expect(c.bounds.bottom).toBeLessThanOrEqual(n.bounds.bottom);
        check(c);
      }
    };
    check(root);
    const dump = dumpUiAutomator(root);
    expect(dump).toContain(
      'resource-id="com.android.settings:id/recycler_view" class="androidx.recyclerview.widget.RecyclerView"',
    );
    expect(dump).toMatch(/scrollable="true"/);
  });

  it('gives nodes keys that survive a redraw and change with the screen instance', () => {
    const ui = makeUi(APPS);
    ui.launch('com.phonelease.login');
    const key = () => {
      const root = ui.viewTree?.();
      const stack = root ? [root] : [];
      while (stack.length) {
        const n = stack.pop();
        if (!n) break;
        if (n.resourceId === 'com.phonelease.login:id/username') return n.key;
        stack.push(...n.children);
      }
      return undefined;
    };
    const first = key();
    ui.settingsChanged?.();
    expect(key()).toBe(first);
    ui.forceStop('com.phonelease.login');
    ui.launch('com.phonelease.login');
    expect(key()).not.toBe(first);
  });
});
