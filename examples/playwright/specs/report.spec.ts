import { test, expect } from 'phonelease/playwright';
import { LoginApp } from '../support/login-app.js';

/**
 * A test that is expected to fail, to show what a failure looks like in the HTML report:
 * the phone's screen at the moment of failure (phone-screen) and its last logcat lines.
 */
test('a failing login shows the phone in the report', async ({ phone }) => {
  test.fail(true, 'Expected to fail: demonstrates the phone-screen and phone-logcat attachments.');
  const app = new LoginApp(phone);
  await app.open();
  await app.logIn('demo', 'wrong');
  expect(await app.result()).toBe('Welcome, demo!');
});
