/**
 * Messages from a lease process to its reaper, one JSON object per line on the reaper's
 * stdin (a private pipe: the API key travels here, never on a command line or in a file).
 * A lease that ends cleanly unregisters: that is its goodbye. When the pipe closes, every
 * lease still registered is ended, whether the process crashed, was killed or just exited
 * without ending it.
 */
export type ReaperMessage =
  /**
   * A lease is starting: if this process dies, end whatever this key created. `deadline`
   * (ms since the epoch): when the server ends the session on its own at the latest.
   */
  | { op: 'register'; key: string; base_url: string; api_key: string; deadline: number }
  /** The key's session id is known (saves the reaper a receipt lookup), with its server deadline. */
  | { op: 'session'; key: string; sid: string; deadline?: number }
  /**
   * The lease could not end its session (or a failed start could not end what it made)
   * within its own budget: end it now, and keep trying until it is confirmed ended or its
   * deadline passes, whether or not this process lives on.
   */
  | { op: 'end'; key: string }
  /** The lease ended cleanly; nothing to do for this key. */
  | { op: 'unregister'; key: string };
