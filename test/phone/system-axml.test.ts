/**
 * Reading apps from their own bytes: the zip reader, the binary XML parser and the manifest
 * reader, on the real Appium APKs and on APKs compiled here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAxml, attr, toXml } from '../../src/apk/axml.js';
import { ApkError, qualify, readApk } from '../../src/apk/manifest.js';
import { ZipReader } from '../../src/apk/zip.js';
import { buildTestApk, buildZip, compileAxml } from '../support/apk-builder.js';

const APPIUM = 'node_modules/appium-uiautomator2-driver/node_modules';
const SETTINGS_APK = `${APPIUM}/io.appium.settings/apks/settings_apk-debug.apk`;
const SERVER_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-v10.6.6.apk`;
const TEST_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-debug-androidTest.apk`;

describe('binary AndroidManifest.xml parser', () => {
  it('parses a compiled manifest with typed attributes', () => {
    const xml = compileAxml({
      name: 'manifest',
      attrs: { package: 'com.example.demo', 'android:versionCode': 42, 'android:versionName': '4.2' },
      children: [{ name: 'application', attrs: { 'android:label': 'Demo', 'android:debuggable': true } }],
    });
    const root = parseAxml(xml);
    expect(root.name).toBe('manifest');
    expect(attr(root, 'package')).toEqual({ type: 'string', value: 'com.example.demo' });
    expect(attr(root, 'versionCode')).toEqual({ type: 'int', value: 42 });
    expect(attr(root, 'versionName')).toEqual({ type: 'string', value: '4.2' });
    const app = root.children[0]!;
    expect(app.name).toBe('application');
    expect(attr(app, 'debuggable')).toEqual({ type: 'bool', value: true });
    expect(toXml(root)).toContain('<application android:label="Demo" android:debuggable="true"/>');
  });

  it('rejects bytes that are not binary XML', () => {
    expect(() => parseAxml(Buffer.from('<manifest/>'))).toThrow();
  });

  it('reads the real Appium settings manifest, resolving the label from resources.arsc', () => {
    const apk = readFileSync(SETTINGS_APK);
    const zip = new ZipReader(apk);
    const manifest = parseAxml(zip.read('AndroidManifest.xml')!);
    const app = manifest.children.find((c) => c.name === 'application')!;
    // The label is a resource reference in the manifest ...
    expect(attr(app, 'label')?.type).toBe('reference');
    // ... and the manifest reader resolves it.
    const info = readApk(apk);
    expect(info.label).toBe('Appium Settings');
  });
});

describe('APK reader', () => {
  it('reads package, versions and launcher activity of io.appium.settings', () => {
    const info = readApk(readFileSync(SETTINGS_APK));
    expect(info.package).toBe('io.appium.settings');
    expect(info.versionCode).toBe(191);
    expect(info.versionName).toBe('8.0.9');
    expect(info.launcherActivity).toBe('io.appium.settings.Settings');
    expect(info.services.map((s) => s.name)).toContain('io.appium.settings.ForegroundService');
    expect(info.debuggable).toBe(true);
  });

  it('reads the UiAutomator2 server and its test APK with the instrumentation entry', () => {
    const server = readApk(readFileSync(SERVER_APK));
    expect(server.package).toBe('io.appium.uiautomator2.server');
    expect(server.versionName).toBe('10.6.6');
    expect(server.versionCode).toBe(278);
    const test = readApk(readFileSync(TEST_APK));
    expect(test.package).toBe('io.appium.uiautomator2.server.test');
    expect(test.instrumentations).toEqual([
      {
        name: 'androidx.test.runner.AndroidJUnitRunner',
        targetPackage: 'io.appium.uiautomator2.server',
        label: 'Tests for io.appium.uiautomator2.server',
      },
    ]);
  });

  it('reads an APK built by the test builder, with relative class names qualified', () => {
    const apk = buildTestApk({
      package: 'com.example.notes',
      versionCode: 7,
      versionName: '2.1.0',
      label: 'Notes',
      activities: ['.MainActivity', 'Other'],
      launcher: true,
      permissions: ['android.permission.CAMERA'],
    });
    const info = readApk(apk);
    expect(info).toMatchObject({
      package: 'com.example.notes',
      versionCode: 7,
      versionName: '2.1.0',
      label: 'Notes',
      launcherActivity: 'com.example.notes.MainActivity',
      permissions: ['android.permission.CAMERA'],
    });
    expect(info.activities.map((a) => a.name)).toEqual([
      'com.example.notes.MainActivity',
      'com.example.notes.Other',
    ]);
  });

  it('falls back to the last package segment when there is no label', () => {
    expect(readApk(buildTestApk({ package: 'org.sample.widget' })).label).toBe('widget');
  });

  it('qualifies component names like PackageManager', () => {
    expect(qualify('a.b', '.C')).toBe('a.b.C');
    expect(qualify('a.b', 'C')).toBe('a.b.C');
    expect(qualify('a.b', 'x.y.C')).toBe('x.y.C');
  });

  it('reports non-APKs clearly', () => {
    expect(() => readApk(Buffer.from('not a zip at all, just text'))).toThrow(ApkError);
    expect(() => readApk(buildZip([{ name: 'README', data: Buffer.from('hi') }]))).toThrow(
      /no AndroidManifest.xml/,
    );
  });

  it('reads stored and deflated zip entries alike', () => {
    const data = Buffer.from('x'.repeat(5000));
    const zip = new ZipReader(
      buildZip([
        { name: 'a.txt', data, stored: true },
        { name: 'b.txt', data },
      ]),
    );
    expect(zip.read('a.txt')!.equals(data)).toBe(true);
    expect(zip.read('b.txt')!.equals(data)).toBe(true);
    expect(zip.entries.get('b.txt')!.compressedSize).toBeLessThan(5000);
    expect(zip.read('missing')).toBeNull();
  });
});

describe('APK signers', () => {
  /** The APK without its APK Signing Block: only its v1 (JAR) signature is left. */
  function withoutSigningBlock(apk: Buffer): Buffer {
    const cd = new ZipReader(apk).centralDirectoryOffset;
    const size = Number(apk.readBigUInt64LE(cd - 24));
    const start = cd - size - 8;
    const stripped = Buffer.concat([apk.subarray(0, start), apk.subarray(cd)]);
    const eocd = stripped.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    stripped.writeUInt32LE(start, eocd + 16);
    return stripped;
  }

  it('reads the certificate of the v2 block and of the v1 signature alike', () => {
    const apk = readFileSync(SERVER_APK);
    const v2 = readApk(apk).signers;
    expect(v2).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/)]);
    expect(readApk(withoutSigningBlock(apk)).signers).toEqual(v2);
    // The server and its test APK come from one build, signed with one debug key.
    expect(readApk(readFileSync(TEST_APK)).signers).toEqual(v2);
    expect(readApk(readFileSync(SETTINGS_APK)).signers).not.toEqual(v2);
  });

  it('reads no signer from an unsigned APK and one per stand-in signer', () => {
    expect(readApk(buildTestApk({ package: 'com.example.unsigned' })).signers).toEqual([]);
    const a = readApk(buildTestApk({ package: 'com.example.s', signer: 'a' })).signers;
    expect(a).toHaveLength(1);
    expect(readApk(buildTestApk({ package: 'com.example.s', signer: 'b' })).signers).not.toEqual(a);
  });

  it('reads the split name and the ABIs of native code', () => {
    const info = readApk(
      buildTestApk({ package: 'com.example.s', split: 'config.arm64_v8a', nativeAbis: ['arm64-v8a'] }),
    );
    expect(info).toMatchObject({ split: 'config.arm64_v8a', nativeAbis: ['arm64-v8a'] });
    expect(readApk(readFileSync(SETTINGS_APK))).toMatchObject({ split: null, nativeAbis: [] });
  });
});
