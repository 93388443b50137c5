/**
 * Ending what a run left behind: the leases a ledger recorded as started and never as
 * ended (a killed worker, a crashed runner). The WebdriverIO launcher calls this in
 * onComplete; a CI step can call it after any test run.
 */
import { PhoneSessionClient, type PhoneSessionClientOptions } from '../client.js';
import { endAndConfirm, type EndResult } from '../end-session.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { defaultLogger } from '../util/log.js';
import { RunLedger, type LedgerLocation } from './ledger.js';
import { messageOf } from '../util/message.js';

export interface EndLeftoversOptions extends LedgerLocation, Omit<PhoneSessionClientOptions, 'baseUrl'> {
  /** A ledger file to read instead of the run's (LedgerLocation picks the run's file). */
  ledgerPath?: string;
  /** Ends only leases of this service (default: each lease's own base URL from the ledger). */
  baseUrl?: string;
  logger?: PhoneleaseLogger;
}

export interface LeftoverResult extends EndResult {
  requestKey: string;
  baseUrl: string;
}

/** Ends every lease the ledger holds open; records their end in it. Never throws for one lease. */
export async function endLeftovers(options: EndLeftoversOptions = {}): Promise<LeftoverResult[]> {
  const ledger = options.ledgerPath ? new RunLedger(options.ledgerPath) : RunLedger.open(options);
  const logger = options.logger ?? defaultLogger(options.env);
  const open = ledger
    .open()
    .filter((l) => !options.baseUrl || l.baseUrl === options.baseUrl.replace(/\/+$/, ''));
  const clients = new Map<string, PhoneSessionClient>();
  const results = await Promise.all(
    open.map(async (lease): Promise<LeftoverResult> => {
      let client = clients.get(lease.baseUrl);
      if (!client)
        clients.set(lease.baseUrl, (client = new PhoneSessionClient({ ...options, baseUrl: lease.baseUrl })));
      const result = await endAndConfirm(client, {
        sessionId: lease.sessionId,
        requestKey: lease.requestKey,
      });
      if (result.outcome !== 'failed') {
        ledger.append({
          event: 'end',
          request_key: lease.requestKey,
          session_id: result.sessionId,
          outcome: `leftover_${result.outcome}`,
          at: new Date().toISOString(),
        });
      }
      if (result.outcome === 'released')
        logger.info(`ended leftover session ${result.sessionId} (pid ${lease.pid} never ended it)`);
      if (result.outcome === 'failed')
        logger.warn(
          `could not end leftover session ${result.sessionId ?? `of key ${lease.requestKey}`}: ${messageOf(result.error)}`,
        );
      return { ...result, requestKey: lease.requestKey, baseUrl: lease.baseUrl };
    }),
  );
  return results;
}
