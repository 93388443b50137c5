import { test, expect } from 'phonelease/playwright';
import { LoginApp } from '../support/login-app.js';

test.describe('login app', () => {
  test('welcomes a user with the right password', async ({ phone }) => {
    const app = new LoginApp(phone);
    await app.open();
    await app.logIn('demo', 'secret');
    await expect(app.result).toHaveText('Welcome, demo!');
  });

  test('refuses a wrong password', async ({ phone }) => {
    const app = new LoginApp(phone);
    await app.open();
    await app.logIn('demo', 'not-the-password');
    await expect(app.result).toHaveText('Wrong username or password');
    await expect(phone.getByText('Welcome', { exact: false })).toBeHidden();
  });

  test('waits for a slow sign-in without sleeping', async ({ phone }) => {
    // The "slow" account answers after 1.5 s; assertions retry until then.
    const app = new LoginApp(phone);
    await app.open();
    await app.logIn('slow', 'secret');
    await expect(app.logInButton).toBeDisabled();
    await expect(app.result).toHaveText('Welcome, slow!');
    await expect(app.logInButton).toBeEnabled();
  });

  test('the phone runs Android 14', async ({ phone }) => {
    const { stdout } = await phone.shell('getprop ro.build.version.release');
    expect(stdout.trim()).toBe('14');
  });
});
