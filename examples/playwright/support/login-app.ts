/**
 * The built-in Login app of the virtual phone as a small page object.
 */
import type { Lease } from 'phonelease/playwright';
import { findById, tap, type } from './screen.js';

const ID = (name: string) => `com.phonelease.login:id/${name}`;

export class LoginApp {
  constructor(private readonly phone: Lease) {}

  async open(): Promise<void> {
    await this.phone.shell('am start -W -n com.phonelease.login/.LoginActivity');
  }

  async logIn(username: string, password: string): Promise<void> {
    await tap(this.phone, await findById(this.phone, ID('username')));
    await type(this.phone, username);
    await tap(this.phone, await findById(this.phone, ID('password')));
    await type(this.phone, password);
    await tap(this.phone, await findById(this.phone, ID('login')));
  }

  async result(): Promise<string> {
    return (await findById(this.phone, ID('result'))).text;
  }
}
