/** What the three assemblies (main.ts, distributed/api-node.ts, distributed/device-host.ts) listen and stop with. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Whether `host` is a wildcard address (every interface): URLs handed out then name another. */
export const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::';

/**
 * The host name of a Host header that is a plain host[:port], or null: only such a header may
 * name the server in a URL it hands out (anything else could point a viewer URL elsewhere).
 */
export function hostnameOf(header: string): string | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]{1,253}))(?::\d{1,5})?$/.exec(header);
  return m ? (m[1] ?? m[2]!) : null;
}

/**
 * The base URL of the URLs handed out to a request: on a wildcard address the address the
 * client used (its Host header, when it is a plain host[:port]), otherwise `url()`.
 */
export const publicUrlOf =
  (listenHost: string, url: () => string) =>
  (requestHost: string | undefined): string =>
    isWildcard(listenHost) && requestHost !== undefined && hostnameOf(requestHost) !== null
      ? `http://${requestHost}`
      : url();

/**
 * Listens on host:port (0 picks a free port) and returns the base URL clients reach it by:
 * `advertised` (default: the host, loopback for a wildcard), an IPv6 address in brackets.
 */
export async function listenUrl(
  app: FastifyInstance,
  host: string,
  port: number,
  advertised = isWildcard(host) ? '127.0.0.1' : host,
): Promise<string> {
  await app.listen({ host, port });
  const bound = (app.server.address() as AddressInfo).port;
  return `http://${advertised.includes(':') ? `[${advertised}]` : advertised}:${bound}`;
}

/** `close` run once: every later call returns the first call's promise. */
export function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () => (closing ??= close());
}
