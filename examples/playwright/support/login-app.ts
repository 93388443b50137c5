/**
 * The built-in Login app of the virtual phone as a small page object: locators only, so
 * every step waits for the screen by itself and shows in the report by name.
 */
import type { Lease, Locator } from 'phonelease/playwright';

export class LoginApp {
  readonly username: Locator;
  readonly password: Locator;
  readonly logInButton: Locator;
  readonly result: Locator;

  constructor(private readonly phone: Lease) {
    this.username = phone.getById('username');
    this.password = phone.getByDesc('password');
    this.logInButton = phone.getByText('Log in', { exact: true });
    this.result = phone.getById('result');
  }

  async open(): Promise<void> {
    await this.phone.launch('com.phonelease.login');
  }

  async logIn(username: string, password: string): Promise<void> {
    await this.username.fill(username);
    await this.password.fill(password);
    await this.logInButton.click();
  }
}
