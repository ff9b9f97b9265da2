// Finds dead agent connections (a cut link, a vanished NAT entry, a powered-off host: no FIN, no
// RST) by pinging only the connections that have been silent, instead of every connection on a
// fixed timer. Agents send a Heartbeat every 15 s (longer above the replica's heartbeat cap, and the
// pings wait as much longer: `beatsLaterByMs`), and every message counts as hearing from the
// connection, so a healthy agent is pinged at most once per heartbeat interval (none when
// it beats more often than `silentMs`) — grpc-js's own server keepalive pings every connection every
// `keepalive_time_ms` whatever flows, which at 10,000 agents is 1,000 pings (and 2,000 timers) a
// second. A connection is dead when a ping is not answered within `answerWithinMs`: at most
// silentMs + sweep + answerWithinMs after the last thing it sent (9 + 1 + 5 = 15 s, as the fixed
// 10 s + 5 s keepalive found it).
//
// grpc-js does not expose a call's HTTP/2 session; it is read from the call's internals
// (`http2SessionOf`, pinned by test/services/gateway/connection-watch.test.ts). Should a grpc-js
// upgrade hide it, a call is watched without pings: closed once silent for `silentMs` plus a
// heartbeat interval (a heartbeat missed by that much), which still finds dead agents, later.
import type { Http2Session } from 'node:http2';

export interface ConnectionWatchOptions {
  /** Ping a connection silent for this long (plus `beatsLaterByMs`). */
  silentMs: number;
  /**
   * How much longer than the base interval agents go between heartbeats now (heartbeat-pace.ts:
   * above the replica's cap). A connection is pinged that much later, so a healthy agent is still
   * pinged at most once per beat, and a dead one is found within about one heartbeat interval.
   */
  beatsLaterByMs?: () => number;
  /** A ping not answered within this ends the connection. */
  answerWithinMs: number;
  /** How often connections are looked at (default 1 s, at most silentMs / 4). */
  sweepMs?: number;
  /** Without access to the connection: close a call silent for silentMs plus this. */
  heartbeatIntervalMs: number;
  /** Called once when a connection is ended for not answering (logging). */
  onDead?: (peer: string) => void;
}

/** What a watched call tells the watch: every message received from it. */
export interface Watched {
  heard(): void;
}

interface Connection {
  heardMs: number;
  /** When the unanswered ping was sent; 0: none outstanding. */
  pingSentMs: number;
  readonly session: Http2Session | null;
  /** Ends the connection (or, without its session, the call). */
  readonly end: () => void;
  readonly peer: string;
}

/** A server call of grpc-js as far as the watch needs it. */
export interface WatchableCall {
  getPeer(): string;
  /** Ends the call when its connection cannot be reached (used only without access to the session). */
  on(event: 'close', listener: () => void): unknown;
}

/**
 * The HTTP/2 session under a grpc-js server call: the surface call holds the intercepting call
 * chain (`call`, then `nextCall`s), whose innermost holds the HTTP/2 stream. Null when that shape
 * changed.
 */
export function http2SessionOf(call: unknown): Http2Session | null {
  let inner = (call as { call?: unknown } | null)?.call;
  for (let depth = 0; depth < 16 && inner && typeof inner === 'object'; depth++) {
    const session = (inner as { stream?: { session?: unknown } }).stream?.session;
    if (session && typeof (session as Http2Session).ping === 'function') return session as Http2Session;
    inner = (inner as { nextCall?: unknown }).nextCall;
  }
  return null;
}

export class ConnectionWatch {
  readonly #options: ConnectionWatchOptions;
  readonly #bySession = new Map<Http2Session, Connection>();
  /** Calls watched without their session (see the header). */
  readonly #sessionless = new Set<Connection>();
  #timer: NodeJS.Timeout | null = null;

  constructor(options: ConnectionWatchOptions) {
    this.#options = options;
  }

  start(): void {
    const sweepMs = this.#options.sweepMs ?? Math.min(1_000, Math.max(10, this.#options.silentMs / 4));
    this.#timer ??= setInterval(() => this.#sweep(), sweepMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#bySession.clear();
    this.#sessionless.clear();
  }

  /** Connections watched now (tests, metrics). */
  get size(): number {
    return this.#bySession.size + this.#sessionless.size;
  }

  /**
   * Watches the connection of this call from now until it closes; several calls of one
   * connection share it. `endCall` ends the call when its connection is out of reach.
   */
  watch(call: WatchableCall, endCall: () => void): Watched {
    const now = Date.now();
    const session = http2SessionOf(call);
    if (!session) {
      const connection: Connection = { heardMs: now, pingSentMs: 0, session: null, end: endCall, peer: call.getPeer() };
      this.#sessionless.add(connection);
      call.on('close', () => this.#sessionless.delete(connection));
      return { heard: () => void (connection.heardMs = Date.now()) };
    }
    let connection = this.#bySession.get(session);
    if (!connection) {
      const created: Connection = {
        heardMs: now,
        pingSentMs: 0,
        session,
        end: () => session.destroy(),
        peer: call.getPeer(),
      };
      connection = created;
      this.#bySession.set(session, created);
      session.once('close', () => this.#bySession.delete(session));
    } else connection.heardMs = now;
    const watched = connection;
    return { heard: () => void (watched.heardMs = Date.now()) };
  }

  #sweep(): void {
    const now = Date.now();
    const { silentMs, answerWithinMs, heartbeatIntervalMs } = this.#options;
    const pingSilentMs = silentMs + (this.#options.beatsLaterByMs?.() ?? 0);
    for (const connection of this.#bySession.values()) {
      if (connection.pingSentMs > 0) {
        if (now - connection.pingSentMs >= answerWithinMs) this.#dead(connection);
      } else if (now - connection.heardMs >= pingSilentMs) this.#ping(connection, now);
    }
    for (const connection of this.#sessionless) {
      if (now - connection.heardMs >= silentMs + heartbeatIntervalMs) {
        this.#sessionless.delete(connection);
        this.#options.onDead?.(connection.peer);
        connection.end();
      }
    }
  }

  #ping(connection: Connection, now: number): void {
    const session = connection.session!;
    if (session.destroyed || session.closed) {
      this.#bySession.delete(session);
      return;
    }
    connection.pingSentMs = now;
    let sent = false;
    try {
      sent = session.ping((error) => {
        // An error: the session was destroyed meanwhile ('close' forgets it).
        if (error) return;
        connection.pingSentMs = 0;
        connection.heardMs = Date.now();
      });
    } catch {
      sent = false;
    }
    if (!sent) this.#dead(connection);
  }

  #dead(connection: Connection): void {
    if (connection.session) this.#bySession.delete(connection.session);
    this.#options.onDead?.(connection.peer);
    connection.end();
  }
}
