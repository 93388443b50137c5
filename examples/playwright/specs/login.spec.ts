import { test, expect } from 'phonelease/playwright';
import { LoginApp } from '../support/login-app.js';

test.describe('login app', () => {
  test('welcomes a user with the right password', async ({ phone }) => {
    const app = new LoginApp(phone);
    await app.open();
    await app.logIn('demo', 'secret');
    expect(await app.result()).toBe('Welcome, demo!');
  });

  test('refuses a wrong password', async ({ phone }) => {
    const app = new LoginApp(phone);
    await app.open();
    await app.logIn('demo', 'not-the-password');
    expect(await app.result()).toBe('Wrong username or password');
  });

  test('the phone runs Android 14', async ({ phone }) => {
    const { stdout } = await phone.shell('getprop ro.build.version.release');
    expect(stdout.trim()).toBe('14');
  });
});
