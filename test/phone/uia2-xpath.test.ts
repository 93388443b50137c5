import { describe, expect, it } from 'vitest';
import { view } from '../support/ui-nodes.js';
import { buildSource, serializeSource } from '../../server/devices/virtual/uia2/source.js';
import {
  evaluateXPath,
  parseXPath,
  selectElements,
  XPathError,
} from '../../server/devices/virtual/uia2/xpath.js';

/*
 * FrameLayout
 *   LinearLayout (id list, scrollable)
 *     TextView "Alpha"        (id title)
 *     TextView "Beta"         (id title, clickable)
 *     Button   "Go" desc=go   (clickable)
 *   LinearLayout (id footer)
 *     TextView "Gamma 1"
 *     EditText "" hint=Name
 */
const tree = view('android.widget.FrameLayout', {}, [
  view('android.widget.LinearLayout', { resourceId: 'com.example:id/list', scrollable: true }, [
    view('android.widget.TextView', { text: 'Alpha', resourceId: 'com.example:id/title' }),
    view('android.widget.TextView', { text: 'Beta', resourceId: 'com.example:id/title', clickable: true }),
    view('android.widget.Button', { text: 'Go', contentDesc: 'go', clickable: true }),
  ]),
  view('android.widget.LinearLayout', { resourceId: 'com.example:id/footer' }, [
    view('android.widget.TextView', { text: 'Gamma 1' }),
    view('android.widget.EditText', { hint: 'Name' }),
  ]),
]);
const doc = buildSource(tree, { width: 720, height: 1280, rotation: 0 });

const texts = (expr: string) => selectElements(expr, doc).map((e) => e.node?.text || e.node?.className);

describe('XPath over the page source', () => {
  it('selects by absolute and relative paths, // and *', () => {
    expect(
      texts('/hierarchy/android.widget.FrameLayout/android.widget.LinearLayout/android.widget.TextView'),
    ).toEqual(['Alpha', 'Beta', 'Gamma 1']);
    expect(texts('//android.widget.TextView')).toEqual(['Alpha', 'Beta', 'Gamma 1']);
    expect(texts('hierarchy/*/*[2]/*[1]')).toEqual(['Gamma 1']);
    expect(selectElements('//*', doc)).toHaveLength(8);
    expect(texts('//android.widget.LinearLayout[1]//android.widget.Button')).toEqual(['Go']);
  });

  it('filters by attributes, text(), contains, starts-with, and/or/not', () => {
    expect(texts("//*[@text='Beta']")).toEqual(['Beta']);
    expect(texts('//*[@resource-id="com.example:id/title"]')).toEqual(['Alpha', 'Beta']);
    expect(texts("//*[text()='Go']")).toEqual(['Go']);
    expect(texts("//*[contains(@text, 'amm')]")).toEqual(['Gamma 1']);
    expect(texts("//*[starts-with(@text, 'Al') or @content-desc='go']")).toEqual(['Alpha', 'Go']);
    expect(
      texts("//android.widget.TextView[@clickable='true' and @resource-id='com.example:id/title']"),
    ).toEqual(['Beta']);
    expect(texts("//android.widget.TextView[not(@clickable='true')]")).toEqual(['Alpha', 'Gamma 1']);
    expect(texts("//*[@hint='Name']")).toEqual(['android.widget.EditText']);
    expect(texts('//*[@scrollable="true"]/*[last()]')).toEqual(['Go']);
    expect(texts('//*[ends-with(@text, " 1")]')).toEqual(['Gamma 1']);
  });

  it('handles positions, parenthesised sets and unions', () => {
    expect(texts('(//android.widget.TextView)[2]')).toEqual(['Beta']);
    expect(texts('(//android.widget.TextView)[last()]')).toEqual(['Gamma 1']);
    expect(texts('//android.widget.TextView[position() > 1]')).toEqual(['Beta']);
    expect(texts("//android.widget.Button | //*[@text='Alpha']")).toEqual(['Alpha', 'Go']);
    expect(texts('//android.widget.TextView[2]')).toEqual(['Beta']);
  });

  it('walks parent, ancestor and sibling axes', () => {
    expect(texts("//*[@text='Go']/..")).toEqual(['android.widget.LinearLayout']);
    expect(texts("//*[@text='Go']/preceding-sibling::*[1]")).toEqual(['Beta']);
    expect(texts("//*[@text='Alpha']/following-sibling::android.widget.Button")).toEqual(['Go']);
    expect(texts("//*[@text='Gamma 1']/ancestor::android.widget.FrameLayout")).toEqual([
      'android.widget.FrameLayout',
    ]);
    expect(selectElements("//*[@text='Gamma 1']/ancestor::*[1]", doc)[0]?.node?.resourceId).toBe(
      'com.example:id/footer',
    );
    expect(
      texts('//android.widget.LinearLayout[android.widget.Button]/descendant::*[@text="Alpha"]'),
    ).toEqual(['Alpha']);
  });

  it('evaluates functions and values', () => {
    expect(evaluateXPath('count(//android.widget.TextView)', doc)).toBe(3);
    expect(evaluateXPath("string(//*[@content-desc='go']/@text)", doc)).toBe('Go');
    expect(evaluateXPath('concat("a", "b", 1)', doc)).toBe('ab1');
    expect(evaluateXPath('1 + 2 * 3 = 7', doc)).toBe(true);
    expect(evaluateXPath("normalize-space('  a   b ')", doc)).toBe('a b');
    expect(evaluateXPath("translate('abc', 'ab', 'AB')", doc)).toBe('ABc');
    expect(evaluateXPath("substring('12345', 2, 3)", doc)).toBe('234');
    expect(evaluateXPath('string-length("four")', doc)).toBe(4);
  });

  it('rejects malformed or non-element expressions with XPathError', () => {
    for (const bad of ['', '//*[@text=', '//*[', 'foo(', '//*[@text="x"]]', '$var', '//comment()']) {
      expect(() => selectElements(bad, doc), bad).toThrow(XPathError);
    }
    expect(() => selectElements('//*/@text', doc)).toThrow(/attributes or text/);
    expect(() => selectElements('count(//*)', doc)).toThrow(XPathError);
    expect(() => parseXPath('unknown-fn()')).not.toThrow();
    expect(() => selectElements('unknown-fn()', doc)).toThrow(/unknown function/);
  });

  it('treats operator names and * by position, as XPath does', () => {
    expect(evaluateXPath('6 div 2', doc)).toBe(3);
    expect(evaluateXPath('7 mod 4', doc)).toBe(3);
    expect(evaluateXPath('2*3', doc)).toBe(6);
    expect(texts('//div')).toEqual([]);
    expect(texts('//*[@text="Alpha" and 1 = 1]')).toEqual(['Alpha']);
  });

  it('searches inside one element when the document is built for it', () => {
    const list = tree.children[0];
    if (!list) throw new Error('fixture');
    const sub = buildSource(tree, { width: 720, height: 1280, rotation: 0 }, list);
    expect(selectElements('//android.widget.TextView', sub).map((e) => e.node?.text)).toEqual([
      'Alpha',
      'Beta',
    ]);
  });

  it('serialises the same tree it queries', () => {
    const xml = serializeSource(doc);
    expect(xml.split('\n')[1]).toBe(
      '<hierarchy index="0" class="hierarchy" rotation="0" width="720" height="1280">',
    );
    expect(xml).toContain(
      '  <android.widget.FrameLayout index="0" package="com.example" class="android.widget.FrameLayout" text=""',
    );
    expect(xml).toContain(
      '<android.widget.Button index="2" package="com.example" class="android.widget.Button" text="Go" resource-id="" content-desc="go"',
    );
    expect(xml.trimEnd().endsWith('</hierarchy>')).toBe(true);
  });
});
