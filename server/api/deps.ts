/**
 * What the HTTP API needs from the rest of the server. Its own module so that route plugins
 * and the viewer pages can name it without importing the app that registers them.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { AccountService } from '../runtime/accounts.js';
import type { Grants } from '../runtime/grants.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../stores/sqlite/store.js';

export interface AppDeps {
  runtime: Runtime;
  accounts: AccountService;
  grants: Grants;
  store: Store;
  clock: Clock;
  log: Logger;
  /**
   * The base URL clients use (known once the server listens). `requestHost` is the Host
   * header of the request being answered: a server on a wildcard address answers with the
   * address the client reached it by.
   */
  publicUrl(requestHost?: string): string;
  /** Where clients reach the ADB gateway (`requestHost` as for publicUrl). */
  adbEndpoint(requestHost?: string): { host: string; port: number };
  /** Origin allowed to embed viewer pages (CSP frame-ancestors); null allows none. */
  dashboardOrigin: string | null;
}

/** The options every route plugin is registered with. */
export interface RouteOptions {
  deps: AppDeps;
}
