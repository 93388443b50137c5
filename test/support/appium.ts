/**
 * Starts a real Appium 3 server (with the uiautomator2 driver from node_modules) as a child
 * process on a free port, pointed at the test's private adb server.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { freePort } from '../../src/util/ports.js';

export interface AppiumServer {
  port: number;
  /** Everything Appium logged so far (for failure messages). */
  logs(): string;
  close(): Promise<void>;
}

function ready(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/status', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function startAppium(adbServerPort: number): Promise<AppiumServer> {
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(
    process.execPath,
    [
      'node_modules/appium/index.js',
      'server',
      '--address',
      '127.0.0.1',
      '--port',
      String(port),
      '--log-no-colors',
      '--log-timestamp',
    ],
    {
      env: {
        ...process.env,
        ANDROID_HOME: '/usr/lib/android-sdk',
        ANDROID_SDK_ROOT: '/usr/lib/android-sdk',
        ANDROID_ADB_SERVER_PORT: String(adbServerPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; i < 300; i++) {
    if (await ready(port)) {
      return {
        port,
        logs: () => output,
        async close() {
          if (child.exitCode === null) child.kill('SIGTERM');
          await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
          if (child.exitCode === null) child.kill('SIGKILL');
          await exited;
        },
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  await exited;
  throw new Error(`Appium did not start:\n${output}`);
}
