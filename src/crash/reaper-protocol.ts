/**
 * Messages from a lease process to its reaper, one JSON object per line on the reaper's
 * stdin (a private pipe: the API key travels here, never on a command line or in a file).
 */
export type ReaperMessage =
  /** A lease is starting: if this process dies, end whatever this key created. */
  | { op: 'register'; key: string; base_url: string; api_key: string }
  /** The key's session id is known (saves the reaper a receipt lookup). */
  | { op: 'session'; key: string; sid: string }
  /** The lease ended cleanly; nothing to do for this key. */
  | { op: 'unregister'; key: string }
  /** The process is leaving on purpose; whatever is still registered is still ended. */
  | { op: 'bye' };
