/**
 * Messages from a lease process to its reaper, one JSON object per line on the reaper's
 * stdin (a private pipe: the API key travels here, never on a command line or in a file).
 * A lease that ends cleanly unregisters: that is its goodbye. When the pipe closes, every
 * lease still registered is ended, whether the process crashed, was killed or just exited
 * without ending it.
 */
export type ReaperMessage =
  /** A lease is starting: if this process dies, end whatever this key created. */
  | { op: 'register'; key: string; base_url: string; api_key: string }
  /** The key's session id is known (saves the reaper a receipt lookup). */
  | { op: 'session'; key: string; sid: string }
  /** The lease ended cleanly; nothing to do for this key. */
  | { op: 'unregister'; key: string };
