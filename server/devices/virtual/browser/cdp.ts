/**
 * A small Chrome DevTools Protocol client over one WebSocket (flattened sessions): what the
 * phone itself needs to watch its browser (targets, screencast, emulation), nothing more.
 */
import WebSocket from 'ws';

type EventListener = (params: Record<string, unknown>, sessionId: string | undefined) => void;

interface Pending {
  resolve: (result: Record<string, unknown>) => void;
  reject: (error: Error) => void;
  method: string;
}

export class CdpClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, Set<EventListener>>();
  private closed = false;

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => this.onMessage(data));
    socket.on('close', () => this.fail(new Error('the browser closed its DevTools connection')));
    socket.on('error', (error) => this.fail(error));
  }

  static connect(url: string): Promise<CdpClient> {
    return new Promise((resolve, reject) => {
      // Screencast frames are PNGs of the whole screen: allow them, but not without bound.
      const socket = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
      socket.once('open', () => resolve(new CdpClient(socket)));
      socket.once('error', reject);
    });
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(new Error(`DevTools connection closed before ${method}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  on(event: string, listener: EventListener): void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
  }

  close(): void {
    this.fail(new Error('DevTools connection closed'));
    this.socket.terminate();
  }

  private fail(error: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new Error(`${p.method}: ${error.message}`));
    this.pending.clear();
  }

  private onMessage(data: Buffer): void {
    let message: {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: Record<string, unknown>;
      error?: { message?: string };
      sessionId?: string;
    };
    try {
      message = JSON.parse(data.toString('utf8')) as typeof message;
    } catch {
      return;
    }
    if (message.id !== undefined) {
      const p = this.pending.get(message.id);
      if (!p) return;
      this.pending.delete(message.id);
      if (message.error) p.reject(new Error(`${p.method}: ${message.error.message ?? 'failed'}`));
      else p.resolve(message.result ?? {});
      return;
    }
    if (message.method) {
      for (const l of this.listeners.get(message.method) ?? []) l(message.params ?? {}, message.sessionId);
    }
  }
}
