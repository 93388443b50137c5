/*
 * The UiAutomator2 server's regex and XPath 2.0 locators, through its HTTP API as Appium
 * drives it: UiSelector's *Matches() methods take java.util.regex.Pattern syntax (as
 * Android's ICU-backed Pattern reads it), and XPath is 2.0 (the PsychoPath engine the real
 * server bundles) unless the enforceXPath1 setting is on.
 */
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPhoneUi } from '../../server/devices/virtual/ui/index.js';
import type { PhoneUi, PhoneUiHost, UiAutomator2Server } from '../../server/devices/virtual/ui/types.js';
import { createUiAutomator2Server, ELEMENT_KEY } from '../../server/devices/virtual/uia2/index.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';
import { buildSource } from '../../server/devices/virtual/uia2/source.js';
import {
  AtomSequence,
  evaluateXPath,
  selectElements,
  XPathDynamicError,
  XPathError,
} from '../../server/devices/virtual/uia2/xpath.js';
import {
  javaFullMatcher,
  JavaRegexSyntaxError,
  JavaRegexUnsupportedError,
} from '../../server/devices/virtual/uia2/java-regex.js';

let ui: PhoneUi;
let uia2: UiAutomator2Server;
let tcp: net.Server;
let base: string;
let sid: string;

beforeEach(async () => {
  const settings = new Map<string, string>();
  const host: PhoneUiHost = {
    launcherApps: () => [
      { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
    ],
    log: () => {},
    setting: (ns, key) => settings.get(`${ns}/${key}`) ?? null,
    setSetting: (ns, key, value) => void settings.set(`${ns}/${key}`, value),
    display: () => ({ width: 720, height: 1280, density: 320 }),
  };
  ui = createPhoneUi(host, {
    width: 720,
    height: 1280,
    density: 320,
    identity: DEVICE,
    now: () => new Date(2025, 0, 6),
  });
  uia2 = createUiAutomator2Server(ui, { identity: DEVICE, log: () => {}, rotate: () => {} });
  tcp = net.createServer((socket) => uia2.handleConnection(socket));
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(tcp.address() as net.AddressInfo).port}`;
  const r = await call('POST', '/session', {
    capabilities: { firstMatch: [{ platformName: 'Android' }], alwaysMatch: {} },
  });
  sid = String(r.body.sessionId);
  // Settings › Network & internet: "Airplane mode", "Mobile data", "Data Saver", "VPN"...
  ui.launch('com.android.settings', 'com.android.settings.Settings$NetworkDashboardActivity');
});

afterEach(async () => {
  uia2.close();
  await new Promise<void>((resolve) => tcp.close(() => resolve()));
});

interface Reply {
  status: number;
  body: { sessionId?: string | null; value: unknown };
}

async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

/** The texts of the elements a locator finds, or the error the server answers. */
async function find(
  strategy: string,
  selector: string,
): Promise<string[] | { status: number; error: string; message: string }> {
  const r = await call('POST', `/session/${sid}/elements`, {
    strategy,
    selector,
    context: '',
    multiple: true,
  });
  if (r.status !== 200) {
    const v = r.body.value as { error: string; message: string };
    return { status: r.status, error: v.error, message: v.message };
  }
  const texts: string[] = [];
  for (const el of r.body.value as Record<string, string>[]) {
    const t = await call('GET', `/session/${sid}/element/${el[ELEMENT_KEY]}/text`);
    texts.push(String(t.body.value));
  }
  return texts;
}

const uiSelector = (s: string) => find('-android uiautomator', s);
const xpath = (s: string) => find('xpath', s);

describe('UiSelector *Matches() take Java regexes', () => {
  it('reads inline flags, POSIX and Unicode classes, and \\Q...\\E', async () => {
    // (?i) at the start: JavaScript read "(?i)" as an invalid group.
    expect(await uiSelector('new UiSelector().textMatches("(?i)vpn")')).toEqual(['VPN']);
    expect(await uiSelector('new UiSelector().textMatches("vpn")')).toEqual([]);
    // \p{Upper}: JavaScript read "\p" as "p" and matched nothing.
    const upper = await uiSelector('new UiSelector().textMatches("\\\\p{Upper}+")');
    expect(upper).toContain('VPN');
    expect(upper).toEqual((upper as string[]).filter((t) => /^\p{Lu}+$/u.test(t)));
    expect(await uiSelector('new UiSelector().textMatches("\\\\p{Lu}\\\\p{L}+ \\\\p{Lower}+")')).toEqual([
      'Airplane mode',
      'Mobile data',
    ]);
    expect(await uiSelector('new UiSelector().textMatches("\\\\QData Saver\\\\E")')).toEqual(['Data Saver']);
    expect(await uiSelector('new UiSelector().textMatches("(?i)\\\\Qdata saver\\\\E")')).toEqual([
      'Data Saver',
    ]);
  });

  it('matches the whole value, as Matcher.matches() does', async () => {
    expect(await uiSelector('new UiSelector().textMatches("VP")')).toEqual([]);
    expect(await uiSelector('new UiSelector().textMatches("V.*|Nothing")')).toEqual(['VPN']);
    expect(
      await uiSelector('new UiSelector().resourceIdMatches(".*:id/title").textMatches("Mob\\\\w+ data")'),
    ).toEqual(['Mobile data']);
  });

  it('answers a pattern Android rejects with its PatternSyntaxException', async () => {
    const r = await uiSelector('new UiSelector().textMatches("(VPN")');
    // As the real server answers a PatternSyntaxException: an unknown error.
    expect(r).toMatchObject({ status: 500, error: 'unknown error' });
    expect((r as { message: string }).message).toMatch(
      /java\.util\.regex\.PatternSyntaxException: Incorrectly nested parentheses in regexp pattern near index \d+\n\(VPN\n *\^$/,
    );
    // ICU refuses a lone brace where the JDK would take it literally.
    expect(await uiSelector('new UiSelector().textMatches("a}")')).toMatchObject({
      message: expect.stringContaining('PatternSyntaxException: Syntax error') as unknown,
    });
  });

  it('refuses, as an invalid selector, what it cannot model', async () => {
    for (const pattern of ['a(?i)b', '(?i:vpn)', '\\\\p{InGreek}', '\\\\G', '[[:alpha:]]']) {
      const r = await uiSelector(`new UiSelector().textMatches("${pattern}")`);
      expect(r, pattern).toMatchObject({ status: 400, error: 'invalid selector' });
      expect((r as { message: string }).message, pattern).toMatch(/not modelled/);
    }
  });
});

describe('XPath 2.0 functions', () => {
  it('finds by matches(), lower-case(), upper-case() and ends-with()', async () => {
    expect(await xpath('//*[matches(@text, "^Data.*")]')).toEqual(['Data Saver']);
    expect(await xpath('//*[matches(@text, "^data s", "i")]')).toEqual(['Data Saver']);
    expect(await xpath('//*[lower-case(@text) = "vpn"]')).toEqual(['VPN']);
    expect(await xpath('//*[upper-case(@text) = "DATA SAVER"]')).toEqual(['Data Saver']);
    expect(await xpath('//*[ends-with(@text, " Saver")]')).toEqual(['Data Saver']);
    expect(await xpath('//*[if (@text = "VPN") then true() else false()]')).toEqual(['VPN']);
  });

  it('refuses them once the enforceXPath1 setting is on, as XPath 1.0 does', async () => {
    await call('POST', `/session/${sid}/appium/settings`, { settings: { enforceXPath1: true } });
    expect(await xpath('//*[matches(@text, "^Data.*")]')).toMatchObject({
      status: 400,
      error: 'invalid selector',
    });
    expect(await xpath('//*[contains(@text, "Saver")]')).toEqual(['Data Saver']);
    await call('POST', `/session/${sid}/appium/settings`, { settings: { enforceXPath1: false } });
    expect(await xpath('//*[matches(@text, "^Data.*")]')).toEqual(['Data Saver']);
  });

  it('answers a bad regex or flag as the real server does: an unknown error', async () => {
    const bad = await xpath('//*[matches(@text, "(VPN")]');
    expect(bad).toMatchObject({ status: 500, error: 'unknown error' });
    expect((bad as { message: string }).message).toMatch(
      /^Invalid regular expression\. Incorrectly nested parentheses in regexp pattern .*Try changing the 'enforceXPath1' driver setting to 'true'/s,
    );
    // PsychoPath takes flags only as a substring of "smix": "is" is refused.
    const flags = await xpath('//*[matches(@text, "vpn", "is")]');
    expect(flags).toMatchObject({ status: 500, error: 'unknown error' });
    expect((flags as { message: string }).message).toMatch(/^Invalid regular expression flag parameter\./);
  });
});

// The server keeps `enforceXPath1` in its settings; these check the evaluator it calls.
describe('XPath evaluation, as a document', () => {
  const doc = () => {
    const tree = ui.viewTree?.();
    if (!tree) throw new Error('no tree');
    return buildSource(tree, { width: 720, height: 1280, rotation: 0 });
  };
  const texts = (expr: string, enforceXPath1 = false) =>
    selectElements(expr, doc(), { enforceXPath1 }).map((e) => e.node?.text);

  it('refuses XPath 2.0 functions under enforceXPath1, as XPath 1.0 does', () => {
    for (const expr of [
      '//*[matches(@text, "VPN")]',
      '//*[lower-case(@text) = "vpn"]',
      '//*[upper-case(@text) = "VPN"]',
      '//*[ends-with(@text, "PN")]',
      '//*[if (@text) then true() else false()]',
    ]) {
      expect(() => texts(expr, true), expr).toThrow(XPathError);
      expect(() => texts(expr, true), expr).toThrow(/unknown function/);
      expect(texts(expr), expr).toContain('VPN');
    }
    expect(texts('//*[contains(@text, "PN")]', true)).toEqual(['VPN']);
  });

  it('evaluates replace(), tokenize(), string-join() and abs()', () => {
    const d = doc();
    expect(evaluateXPath('replace("Private DNS", "(\\w+) (\\w+)", "$2 $1")', d)).toBe('DNS Private');
    expect(evaluateXPath('replace("a.b", "\\.", "\\$")', d)).toBe('a$b');
    const parts = evaluateXPath('tokenize("Wi-Fi, mobile data, hotspot", ",\\s*")', d);
    expect(parts).toBeInstanceOf(AtomSequence);
    expect((parts as AtomSequence).items).toEqual(['Wi-Fi', 'mobile data', 'hotspot']);
    // PsychoPath drops the empty token after a final separator.
    expect((evaluateXPath('tokenize(" a b ", " ")', d) as AtomSequence).items).toEqual(['', 'a', 'b']);
    expect(evaluateXPath('tokenize("a b c", " ")[2]', d)).toEqual(new AtomSequence(['b']));
    expect(evaluateXPath('count(tokenize("a b c", " "))', d)).toBe(3);
    expect(evaluateXPath('string-join(tokenize("a b c", " "), "+")', d)).toBe('a+b+c');
    expect(evaluateXPath('abs(-2.5)', d)).toBe(2.5);
    expect(evaluateXPath('round(-2.5)', d)).toBe(-2);
    expect(texts('//*[tokenize(@text, " ")[2] = "Saver"]')).toEqual(['Data Saver']);
    expect(() => evaluateXPath('tokenize("abc", "x*")', d)).toThrow(XPathDynamicError);
    expect(() => evaluateXPath('tokenize("a b", " ")[. = "a"]', d)).toThrow(/positions/);
    expect(() => evaluateXPath('some $x in //* satisfies $x', d)).toThrow(/not supported/);
  });

  it("gives matches() XPath's flags, with UNIX_LINES and find() semantics", () => {
    const d = doc();
    expect(evaluateXPath('matches("Network", "work")', d)).toBe(true);
    expect(evaluateXPath('matches("a\nb", "a.b")', d)).toBe(false);
    expect(evaluateXPath('matches("a\nb", "a.b", "s")', d)).toBe(true);
    expect(evaluateXPath('matches("a\nb", "^b$", "m")', d)).toBe(true);
    expect(evaluateXPath('matches("a\nb", "^b$")', d)).toBe(false);
    // UNIX_LINES: only \n ends a line, so "." matches \r.
    expect(evaluateXPath('matches("a\rb", "a.b")', d)).toBe(true);
    expect(evaluateXPath('matches("AB", "a b", "ix")', d)).toBe(true);
    // "i" is dropped when the pattern has \p{..} (PsychoPath).
    expect(evaluateXPath('matches("ab", "\\p{Lu}", "i")', d)).toBe(false);
    // XSD's class subtraction becomes Java's intersection.
    expect(evaluateXPath('matches("b", "^[a-z-[aeiou]]$")', d)).toBe(true);
    expect(evaluateXPath('matches("a", "^[a-z-[aeiou]]$")', d)).toBe(false);
    // \i (an XSD escape) is not Java's: Android's Pattern refuses it.
    expect(() => evaluateXPath('matches("a", "\\i")', d)).toThrow(XPathDynamicError);
  });
});

describe('the Java regex translator', () => {
  it("models Android's Pattern: Unicode classes, possessive and atomic groups, anchors", () => {
    expect(javaFullMatcher('\\d+')('٣4')).toBe(true); // ICU: \d is \p{Nd}
    expect(javaFullMatcher('\\p{Alpha}+')('Éa')).toBe(true);
    expect(javaFullMatcher('\\p{Punct}')('¿')).toBe(true);
    expect(javaFullMatcher('\\p{IsLatin}+')('abc')).toBe(true);
    expect(javaFullMatcher('[a-z&&[^aeiou]]+')('xyz')).toBe(true);
    expect(javaFullMatcher('[a-z&&[^aeiou]]+')('xaz')).toBe(false);
    expect(javaFullMatcher('a*+a')('aaa')).toBe(false); // possessive: gives nothing back
    expect(javaFullMatcher('a*a')('aaa')).toBe(true);
    expect(javaFullMatcher('(?>a|ab)c')('abc')).toBe(false);
    expect(javaFullMatcher('(x)(?>y)(z)\\2')('xyzz')).toBe(true);
    expect(javaFullMatcher('.+')('a\nb')).toBe(false);
    expect(javaFullMatcher('(?s).+')('a\nb')).toBe(true);
    expect(javaFullMatcher('(?m)a$\\n^b')('a\nb')).toBe(true);
    expect(javaFullMatcher('a\\bb|a b')('a b')).toBe(true);
    expect(javaFullMatcher('(?x) a  b  # comment')('ab')).toBe(true);
    expect(javaFullMatcher('(?i)ǅ')('ǆ')).toBe(true); // Unicode case folding on Android
  });

  it("throws PatternSyntaxException's message for what Android rejects, and refuses the rest", () => {
    for (const bad of ['(a', 'a)', '[a', 'x{2', '*', '\\y', '(?<=a+)b', '[z-a]', '\\2(a)', 'a{3,1}'])
      expect(() => javaFullMatcher(bad), bad).toThrow(JavaRegexSyntaxError);
    for (const unmodelled of ['(?i:a)', 'a(?i)b', '(?d)a', '\\X', '[]a]', '[^a&&b]', '\\p{javaLowerCase}'])
      expect(() => javaFullMatcher(unmodelled), unmodelled).toThrow(JavaRegexUnsupportedError);
  });
});
