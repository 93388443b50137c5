/**
 * What the HTTP API needs from the rest of the server. Its own module so that route plugins
 * and the viewer pages can name it without importing the app that registers them.
 */
import type { FastifyInstance } from 'fastify';
import type { ErrorCode } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import type { ApiError } from '../errors.js';
import type { FleetView } from '../fleet.js';
import type { Logger } from '../log.js';
import type { DashboardSessions } from '../runtime/dashboard-sessions.js';
import type { Admission, SessionDirectory } from '../runtime/directory.js';
import type { Grants } from '../runtime/grants.js';
import type { StreamHandler } from '../viewer/stream.js';

/** What --metrics adds to the API: creates counted, GET /metrics served. */
export interface ApiMetrics {
  /** A create the API answered: admitted, replayed, recorded, or refused with a code. */
  admission(outcome: Admission['outcome'] | { refused: ErrorCode }): void;
  /** Counts and times every answer (an API node's own requests); optional. */
  observe?(app: FastifyInstance): void;
  /** The exposition, in the Prometheus text format. */
  text(): Promise<{ contentType: string; body: string }>;
}

export interface AppDeps {
  /** The service behind every route: the single server's sessions, or a deployment's. */
  directory: SessionDirectory;
  grants: Grants;
  clock: Clock;
  log: Logger;
  /**
   * The base URL clients use (known once the server listens). `requestHost` is the Host
   * header of the request being answered: a server on a wildcard address answers with the
   * address the client reached it by.
   */
  publicUrl(requestHost?: string): string;
  /**
   * Where clients reach this server's ADB gateway (`requestHost` as for publicUrl); absent on
   * an API node, whose sessions name the gateway of the device host that runs them.
   */
  adbEndpoint?(requestHost?: string): { host: string; port: number };
  /** Origin allowed to embed viewer pages (CSP frame-ancestors); null allows none. */
  dashboardOrigin: string | null;
  /** The dashboard's sessions: signing in and out, and the JWTs the credential check accepts. */
  signIns: DashboardSessions;
  /** The fleet the dashboard shows operators (the figures /metrics serves). */
  fleet(): Promise<FleetView>;
  /** Takes the viewer pages' live streams (WebSocket upgrades). */
  streams: StreamHandler;
  /** Display label of history records of sessions that never got a phone (by device backend). */
  genericDevice: string;
  /** --metrics. */
  metrics?: ApiMetrics;
  /** Failures beyond the API's own (an API node's lost database) as the error the caller sees. */
  translate?(err: Error): ApiError | undefined;
}
