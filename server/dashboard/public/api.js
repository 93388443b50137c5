// @ts-check
/**
 * The dashboard's one way to the API: the same routes the CLI uses, on the same origin,
 * with the dashboard's sign-in token (a JWT) in the Authorization header and nowhere else:
 * never in a URL, never in a cookie. It lives in sessionStorage, so the browser never sends
 * it by itself (no CSRF to defend against) and it goes away with the tab.
 */

/**
 * @typedef {{ uid: string, email: string, name: string, operator: boolean }} SignedInAccount
 * @typedef {{ token: string, expires_at: number, account: SignedInAccount }} SignIn
 */

const STORAGE_KEY = 'phonelease.dashboard.sign-in';

/** A refusal from the API, carrying the contract's error body (`{error, code, ...}`). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [body]
   */
  constructor(status, code, message, body = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** The words of any failure, for the page: the contract's own message when there is one. */
export function messageOf(/** @type {unknown} */ err) {
  return err instanceof Error ? err.message : String(err);
}

export class Api {
  /**
   * @param {{ storage: Storage, onSignedOut: (reason: string) => void }} opts
   *   onSignedOut runs once when the API stops taking the token (expired, signed out
   *   elsewhere): the app then shows the sign-in page.
   */
  constructor({ storage, onSignedOut }) {
    this.storage = storage;
    this.onSignedOut = onSignedOut;
  }

  /**
   * The current sign-in, or null when signed out. Its expiry is the server's to judge (a
   * 401), not this browser's clock, which may be off.
   * @returns {SignIn | null}
   */
  get signIn() {
    const raw = this.storage.getItem(STORAGE_KEY);
    if (!raw) return null;
    try {
      const s = /** @type {SignIn} */ (JSON.parse(raw));
      if (typeof s.token === 'string' && s.account) return s;
    } catch {
      // not ours: treat as signed out
    }
    this.storage.removeItem(STORAGE_KEY);
    return null;
  }

  /**
   * Signs in with a one-time link's token or an API key (always in the POST body).
   * @param {{ link: string } | { key: string }} credential
   * @returns {Promise<SignIn>}
   */
  async signInWith(credential) {
    const s = /** @type {SignIn} */ (
      await this.#send('POST', '/dashboard/api/sign-in', { body: credential, auth: false })
    );
    this.storage.setItem(STORAGE_KEY, JSON.stringify(s));
    return s;
  }

  /** Ends the sign-in on the server (the token then answers 401 everywhere) and here. */
  async signOut() {
    try {
      if (this.signIn) await this.#send('POST', '/dashboard/api/sign-out', { quiet: true });
    } finally {
      this.storage.removeItem(STORAGE_KEY);
    }
  }

  /**
   * @param {string} path
   * @param {AbortSignal} [signal]
   */
  get(path, signal) {
    return this.#send('GET', path, { signal });
  }

  /**
   * @param {string} path
   * @param {unknown} [body]
   */
  post(path, body) {
    return this.#send('POST', path, { body });
  }

  /** @param {string} path */
  delete(path) {
    return this.#send('DELETE', path, {});
  }

  /**
   * An image the API serves only with the Authorization header (frame.png): fetched here
   * and shown through a blob: URL, which the caller revokes once it is replaced.
   * @param {string} path
   * @param {AbortSignal} [signal]
   * @returns {Promise<Blob>}
   */
  async image(path, signal) {
    const res = await this.#fetch('GET', path, { signal });
    return res.blob();
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, auth?: boolean, signal?: AbortSignal, quiet?: boolean }} opts
   * @returns {Promise<any>}
   */
  async #send(method, path, opts) {
    const res = await this.#fetch(method, path, opts);
    if (res.status === 204) return null;
    return res.json();
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, auth?: boolean, signal?: AbortSignal, quiet?: boolean }} opts
   *   quiet: a 401 does not call onSignedOut (signing out is already under way).
   * @returns {Promise<Response>}
   */
  async #fetch(method, path, { body, auth = true, signal, quiet = false }) {
    /** @type {Record<string, string>} */
    const headers = { accept: 'application/json' };
    if (auth) {
      const s = this.signIn;
      if (!s) {
        this.onSignedOut('Your sign-in has ended. Sign in again to continue.');
        throw new ApiError(401, 'unauthenticated', 'You are signed out. Sign in again to continue.');
      }
      headers.authorization = `Bearer ${s.token}`;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    /** @type {Response} */
    let res;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ?? null,
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ApiError(
        0,
        'unreachable',
        `Cannot reach the phonelease server (${messageOf(err)}). Check that it is running, then reload.`,
      );
    }
    if (res.ok) return res;
    const error = await errorOf(res);
    if (res.status === 401 && auth) {
      this.storage.removeItem(STORAGE_KEY);
      if (!quiet) this.onSignedOut('Your sign-in has ended. Sign in again to continue.');
    }
    throw error;
  }
}

/**
 * @param {Response} res
 * @returns {Promise<ApiError>}
 */
async function errorOf(res) {
  /** @type {unknown} */
  let body = null;
  try {
    body = await res.json();
  } catch {
    // not the contract's JSON body (a proxy's page): say what came back instead
  }
  if (body && typeof body === 'object' && 'error' in body && 'code' in body) {
    const b = /** @type {Record<string, unknown>} */ (body);
    return new ApiError(res.status, String(b.code), String(b.error), b);
  }
  return new ApiError(
    res.status,
    'http_error',
    `The server answered ${res.status} ${res.statusText || ''}`.trim() + '. Try again in a moment.',
  );
}
