/**
 * phonelease: a disposable Android phone for every test.
 *
 *   import { leasePhone } from 'phonelease';
 *   await using phone = await leasePhone();
 *   await phone.shell('echo hi');
 */
export * from './api/schemas.js';
export {
  PhoneSessionClient,
  resolveConfig,
  type PhoneSessionClientOptions,
  type CallOptions,
  type CreateSessionOptions,
  type GetSessionOptions,
  type Image,
  type FetchLike,
  type FetchInitLike,
  type FetchResponseLike,
} from './client.js';
export * from './errors.js';
export { ERROR_REGISTRY, errorSpec, isErrorCode, type ErrorSpec } from './api/errors.js';
export {
  DEFAULT_RETRY,
  mayRetry,
  retryDelay,
  retryPolicy,
  withRetry,
  type RetryOptions,
  type RetryPolicy,
  type RetryContext,
} from './retry.js';
export { leasePhone, Lease, type LeaseOptions, type EndedLease, type AppiumOptions } from './lease/lease.js';
export {
  endAndConfirm,
  type EndOutcome,
  type EndResult,
  type EndTarget,
  type EndOptions,
} from './end-session.js';
export type { StartStats } from './lease/start.js';
export type { RecordingOptions, RecordingResult } from './lease/recording.js';
export type { LogcatCaptureOptions, LogcatResult } from './logcat/capture.js';
export { findCrashes, type AppCrash, type CrashKind } from './logcat/crashes.js';
export { PhoneAdb, type ShellResult, type ShellBytesResult } from './adb/phone-adb.js';
export { PortForwards, PortAlreadyReversedError, PortForwardError } from './adb/port-forwards.js';
export {
  launchBrowser,
  BrowserUnavailableError,
  DevToolsTimeoutError,
  CHROME_PACKAGE,
  DEVTOOLS_SOCKET,
  type LaunchBrowserOptions,
  type PhoneBrowser,
  type BrowserHost,
} from './web/browser.js';
export { AdbTunnel, type TunnelOptions } from './adb/tunnel.js';
export { openGateway, type AdbEndpoint } from './adb/gateway.js';
export { appiumCapabilities, type AppiumCapabilities, type AppiumCapabilityOptions } from './adb/appium.js';
export {
  adbConnect,
  adbDisconnect,
  adbServerPort,
  resolveAdbPath,
  runAdb,
  type StockAdbOptions,
} from './adb/stock-adb.js';
export { endLeftovers, type EndLeftoversOptions, type LeftoverResult } from './crash/leftovers.js';
export {
  RunLedger,
  ledgerPath,
  ledgerDir,
  currentRunId,
  type LedgerLease,
  type LedgerLocation,
  type LedgerEvent,
} from './crash/ledger.js';
export { processGuard, type ProcessGuard } from './crash/guard.js';
export {
  defaultLogger,
  stderrLogger,
  silentLogger,
  debugEnabled,
  type PhoneleaseLogger,
} from './util/log.js';
export { redact } from './util/redact.js';
export { newIdempotencyKey } from './util/ids.js';
