import { describe, expect, it } from 'vitest';
import { view } from '../support/ui-nodes.js';
import {
  matchSelector,
  parseUiSelector,
  UiSelectorError,
  type Selector,
} from '../../server/devices/virtual/uia2/ui-selector.js';

const tree = view('android.widget.FrameLayout', {}, [
  view('androidx.recyclerview.widget.RecyclerView', { resourceId: 'com.example:id/list', scrollable: true }, [
    view('android.widget.LinearLayout', { clickable: true }, [
      view('android.widget.TextView', { text: 'Wi-Fi', resourceId: 'android:id/title' }),
      view('android.widget.Switch', { checkable: true, checked: true, text: 'ON' }),
    ]),
    view('android.widget.LinearLayout', { clickable: true }, [
      view('android.widget.TextView', { text: 'Airplane mode', resourceId: 'android:id/title' }),
      view('android.widget.Switch', { checkable: true, checked: false, text: 'OFF', enabled: false }),
    ]),
  ]),
  view('android.widget.Button', {
    text: 'Log in',
    contentDesc: 'login',
    clickable: true,
    resourceId: 'com.example:id/login',
  }),
]);

function selector(src: string): Selector {
  const [st] = parseUiSelector(src);
  if (!st || st.kind !== 'selector') throw new Error('not a plain selector');
  return st.selector;
}

const find = (src: string) => matchSelector(selector(src), tree).map((n) => n.text || n.className);

describe('UiSelector', () => {
  it('matches text, description, resource id and class', () => {
    expect(find('new UiSelector().text("Log in")')).toEqual(['Log in']);
    expect(find('new UiSelector().textContains("mode")')).toEqual(['Airplane mode']);
    expect(find('new UiSelector().textStartsWith("Wi")')).toEqual(['Wi-Fi']);
    expect(find('new UiSelector().textMatches("A.*e")')).toEqual(['Airplane mode']);
    expect(find('new UiSelector().description("login")')).toEqual(['Log in']);
    expect(find('new UiSelector().descriptionContains("og")')).toEqual(['Log in']);
    expect(find('new UiSelector().resourceId("android:id/title")')).toEqual(['Wi-Fi', 'Airplane mode']);
    expect(find('new UiSelector().resourceIdMatches(".*:id/log.*")')).toEqual(['Log in']);
    expect(find('new UiSelector().className("android.widget.Switch")')).toEqual(['ON', 'OFF']);
  });

  it('combines flags, index and instance', () => {
    expect(find('new UiSelector().className("android.widget.Switch").checked(true)')).toEqual(['ON']);
    expect(find('new UiSelector().className("android.widget.Switch").enabled(false)')).toEqual(['OFF']);
    expect(find('new UiSelector().clickable(true).className("android.widget.Button")')).toEqual(['Log in']);
    expect(find('new UiSelector().scrollable(true)')).toEqual(['androidx.recyclerview.widget.RecyclerView']);
    expect(find('new UiSelector().resourceId("android:id/title").instance(1)')).toEqual(['Airplane mode']);
    expect(find('new UiSelector().resourceId("android:id/title").instance(5)')).toEqual([]);
    expect(find('new UiSelector().className("android.widget.Switch").index(1)')).toEqual(['ON', 'OFF']);
    expect(find('new UiSelector().className("android.widget.TextView").index(1)')).toEqual([]);
  });

  it('follows childSelector and fromParent', () => {
    expect(
      find(
        'new UiSelector().scrollable(true).childSelector(new UiSelector().className("android.widget.Switch").instance(1))',
      ),
    ).toEqual(['OFF']);
    expect(
      find('new UiSelector().text("Wi-Fi").fromParent(new UiSelector().className("android.widget.Switch"))'),
    ).toEqual(['ON']);
  });

  it('accepts shorthand, qualified names, escapes and ; alternatives', () => {
    expect(find('.text("Log in")')).toEqual(['Log in']);
    expect(find('text("Log in")')).toEqual(['Log in']);
    expect(find('new androidx.test.uiautomator.UiSelector().text("Log in")')).toEqual(['Log in']);
    expect(find('new UiSelector().text("Log\\u0020in")')).toEqual(['Log in']);
    const statements = parseUiSelector('new UiSelector().text("Wi-Fi"); new UiSelector().text("Log in")');
    expect(statements).toHaveLength(2);
    const all = statements
      .flatMap((s) => (s.kind === 'selector' ? matchSelector(s.selector, tree) : []))
      .map((n) => n.text);
    expect(all).toEqual(['Wi-Fi', 'Log in']);
  });

  it('parses UiScrollable with its search target', () => {
    const [st] = parseUiSelector(
      'new UiScrollable(new UiSelector().scrollable(true).instance(0)).setMaxSearchSwipes(5).scrollIntoView(new UiSelector().text("About phone"))',
    );
    expect(st?.kind).toBe('scrollable');
    if (st?.kind !== 'scrollable') return;
    expect(st.maxSwipes).toBe(5);
    expect(matchSelector(st.container, tree).map((n) => n.className)).toEqual([
      'androidx.recyclerview.widget.RecyclerView',
    ]);
    expect(st.actions.map((a) => a.kind)).toEqual(['scrollIntoView']);
  });

  it('searches only below a context node when given one', () => {
    const list = tree.children[0];
    expect(
      matchSelector(selector('new UiSelector().clickable(true)'), tree, list).map((n) => n.className),
    ).toEqual(['android.widget.LinearLayout', 'android.widget.LinearLayout']);
  });

  it('rejects unknown methods and malformed input', () => {
    for (const bad of [
      '',
      'new UiSelector().colour("red")',
      'new UiSelector().text(1)',
      'new UiSelector().text("unterminated)',
      'new UiSelector().text("a"',
      'new UiSelector().textMatches("(")',
      'new UiSelector().instance("x")',
      'new UiCollection().text("a")',
    ]) {
      expect(() => parseUiSelector(bad), bad).toThrow(UiSelectorError);
    }
  });
});
