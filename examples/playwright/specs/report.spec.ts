import { test, expect } from 'phonelease/playwright';
import { LoginApp } from '../support/login-app.js';

/**
 * A test that is expected to fail, to show what a failure looks like in the HTML report:
 * the steps by name, the phone's screen at the moment of failure (phone-screen), its UI
 * tree (phone-ui.xml) and the whole test's log (phone-logcat).
 */
test('a failing login shows the phone in the report', async ({ phone }) => {
  test.fail(
    true,
    'Expected to fail: demonstrates the phone-screen, phone-ui.xml and phone-logcat attachments.',
  );
  const app = new LoginApp(phone);
  await app.open();
  await app.logIn('demo', 'wrong');
  await expect(app.result).toHaveText('Welcome, demo!', { timeout: 2000 });
});
