// The agent's long-lived Connect session: opens it (Hello first), heartbeats, hands server messages
// to the SessionHandler, and when the call ends for any reason reconnects with full-jitter
// backoff, rotating among the control-plane addresses. Nothing else re-opens a failed gRPC call.
import { Readable } from 'node:stream';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.ts';
import { pause } from './pause.ts';
import { authMetadata, createAgentClient, waitForChannel } from './client.ts';
import type { AgentIdentity } from './identity.ts';
import type { AgentMessage, AgentServiceClient, ServerMessage } from './proto.ts';
import type { AgentInfo } from './register.ts';
import type { AgentLink, SessionHandler } from './session-handler.ts';

export interface AgentConnectionOptions {
  readonly servers: readonly string[];
  readonly credentials: grpc.ChannelCredentials;
  readonly identity: AgentIdentity;
  readonly info: AgentInfo;
  /** Health facts sent in Hello and every Heartbeat (asked afresh each time: disks fill, packages get installed). */
  readonly health?: () => { interpreters: string[]; homeFreeBytes: string };
  readonly handler: SessionHandler;
  readonly logger: Logger;
  readonly backoff?: BackoffOptions;
  /** A session that lasted this long after its Welcome resets the backoff (default 1 s). */
  readonly healthyAfterMs?: number;
  /** Give up on an address whose channel is not READY within this (default 5 s). */
  readonly connectTimeoutMs?: number;
  /** Give up on a session that is not welcomed within this (default 10 s). */
  readonly welcomeTimeoutMs?: number;
  /** gRPC channel options on top of the agent's own. */
  readonly channelOptions?: grpc.ChannelOptions;
}

interface SessionEnd {
  readonly welcomed: boolean;
  readonly healthyMs: number;
  readonly reason: string;
}

type ConnectCall = grpc.ClientDuplexStream<AgentMessage, ServerMessage>;

const DEFAULT_HEARTBEAT_MS = 15_000;
/** Bounds on an interval the control plane tells (a wrong one must not make the agent spin or look gone). */
const MIN_HEARTBEAT_MS = 100;
const MAX_HEARTBEAT_MS = 120_000;

/** The interval of a Welcome or HeartbeatPace: 0 (not set) → the default; otherwise bounded. */
function boundedHeartbeatMs(toldMs: number): number {
  if (!(toldMs > 0)) return DEFAULT_HEARTBEAT_MS;
  return Math.min(MAX_HEARTBEAT_MS, Math.max(MIN_HEARTBEAT_MS, toldMs));
}

export class AgentConnection implements AgentLink {
  readonly #options: AgentConnectionOptions;
  readonly #clients = new Map<string, AgentServiceClient>();
  /** Aborted by stop(): ends a reconnect pause at once, so SIGTERM does not wait out a 30 s backoff. */
  readonly #stopping = new AbortController();
  #server: string;
  #call: ConnectCall | undefined;
  #welcomed = false;
  #congested = false;
  #stopped = false;
  #loop: Promise<void> | undefined;

  constructor(options: AgentConnectionOptions) {
    if (options.servers.length === 0) throw new Error('AgentConnection needs at least one server address');
    this.#options = options;
    this.#server = options.servers[0] ?? '';
  }

  /** True while a welcomed session is open. */
  get isConnected(): boolean {
    return this.#call !== undefined && this.#welcomed;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Ends the session (pending writes are flushed first) and stops reconnecting. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    const call = this.#call;
    if (call) {
      call.end();
      setTimeout(() => call.cancel(), 1000).unref();
    }
    await this.#loop;
    for (const client of this.#clients.values()) client.close();
    this.#clients.clear();
  }

  trySend(message: AgentMessage): boolean {
    const call = this.#call;
    if (!call || !this.#welcomed || this.#congested) return false;
    if (!call.write(message)) {
      // Accepted but over the high-water mark: hold further messages until 'drain'.
      this.#congested = true;
      call.once('drain', () => {
        if (this.#call !== call) return;
        this.#congested = false;
        this.#options.handler.onWritable();
      });
    }
    return true;
  }

  /** Streams a package's bytes from the server of the current (or last) session. */
  downloadPackage(packageId: string, version: string, signal: AbortSignal): Readable {
    const call = this.#client(this.#server).DownloadPackage(
      { packageId, version },
      authMetadata(this.#options.identity),
    );
    return bytesOf(call, signal);
  }

  /** Streams the agent bundle an UpgradeAgent named, from the server of the current (or last) session. */
  downloadAgentBundle(version: string, signal: AbortSignal): Readable {
    const call = this.#client(this.#server).DownloadAgentBundle({ version }, authMetadata(this.#options.identity));
    return bytesOf(call, signal);
  }

  /**
   * Ends the current session gracefully (what was written is delivered first); the loop opens a
   * new one, on which the control plane offers every task of this machine again.
   */
  endSession(): void {
    this.#call?.end();
  }

  /**
   * The reconnect loop. A session that worked and ended (the replica died, restarted, or dropped
   * us) is retried after a short jittered pause, first at the same address; an address that does
   * not take us is left for the next one at once, so an agent fails over to another replica in
   * about a second. Only when every address failed in turn does the backoff grow (full jitter, so
   * a fleet does not come back in lock-step). A session that ends within a second of its Welcome
   * counts as a failure, so a server that keeps dropping us is not hammered.
   */
  async #run(): Promise<void> {
    const { servers, logger } = this.#options;
    const backoff = this.#options.backoff ?? DEFAULT_BACKOFF;
    let failedRounds = 0;
    let failedInRound = 0;
    let index = 0;
    while (!this.#stopped) {
      const server = servers[index % servers.length] ?? '';
      const end = await this.#session(server);
      if (this.#stopped) break;
      let delayMs: number;
      if (end.welcomed && end.healthyMs >= (this.#options.healthyAfterMs ?? 1_000)) {
        failedRounds = 0;
        failedInRound = 0;
        delayMs = backoffDelayMs(0, backoff);
      } else {
        if (!end.welcomed) index++; // this address did not take us: the next one
        failedInRound++;
        if (failedInRound < servers.length) delayMs = 0;
        else {
          failedInRound = 0;
          delayMs = backoffDelayMs(failedRounds++, backoff);
        }
      }
      logger.warn({ server, reason: end.reason, delayMs }, 'control-plane session ended; reconnecting');
      await pause(delayMs, this.#stopping.signal);
    }
  }

  async #session(server: string): Promise<SessionEnd> {
    const client = this.#client(server);
    try {
      await waitForChannel(client, this.#options.connectTimeoutMs ?? 5000);
    } catch {
      return { welcomed: false, healthyMs: 0, reason: `${server} is unreachable` };
    }
    if (this.#stopped) return { welcomed: false, healthyMs: 0, reason: 'stopping' };
    this.#server = server;
    const call = client.Connect(authMetadata(this.#options.identity));
    this.#call = call;
    const { handler, logger, info } = this.#options;

    return new Promise<SessionEnd>((resolve) => {
      let welcomedAt = 0;
      let heartbeat: NodeJS.Timeout | undefined;
      let ended = false;
      const welcomeTimer = setTimeout(() => call.cancel(), this.#options.welcomeTimeoutMs ?? 10_000);
      const finish = (reason: string): void => {
        if (ended) return;
        ended = true;
        clearTimeout(welcomeTimer);
        clearInterval(heartbeat);
        this.#call = undefined;
        this.#welcomed = false;
        this.#congested = false;
        call.cancel();
        handler.onDisconnected();
        resolve({ welcomed: welcomedAt > 0, healthyMs: welcomedAt > 0 ? Date.now() - welcomedAt : 0, reason });
      };

      // Written even when the stream is congested (write() takes it and only advises to wait):
      // a backlog of log lines must never make the agent look silent. Flow control bounds the rest.
      const beat = (): void => {
        if (this.#call !== call) return;
        const homeFreeBytes = this.#options.health?.().homeFreeBytes ?? '0';
        call.write({ heartbeat: { sentUnixMs: String(Date.now()), homeFreeBytes } });
      };

      call.on('data', (message: ServerMessage) => {
        if (ended) return;
        if (message.heartbeatPace) {
          // The control plane answers a heartbeat with it, so beating from now on keeps this
          // agent's random phase (the fleet's beats stay spread).
          if (welcomedAt === 0) return;
          clearInterval(heartbeat);
          heartbeat = setInterval(beat, boundedHeartbeatMs(message.heartbeatPace.heartbeatIntervalMs));
          return;
        }
        if (message.welcome) {
          clearTimeout(welcomeTimer);
          welcomedAt = Date.now();
          this.#welcomed = true;
          const intervalMs = boundedHeartbeatMs(message.welcome.heartbeatIntervalMs);
          // A random phase within the interval: a fleet that connected together (a replica
          // restarted) does not beat together, so the control plane sees a steady rate, not bursts.
          heartbeat = setTimeout(() => {
            if (ended) return;
            beat();
            heartbeat = setInterval(beat, intervalMs);
          }, Math.random() * intervalMs);
          logger.info({ server }, 'connected to the control plane');
          handler.onWelcome({
            acceptsLogChunks: message.welcome.acceptsLogChunks,
            maxUnackedLogBytes: message.welcome.maxUnackedLogBytes,
          });
          handler.onWritable();
          return;
        }
        try {
          handler.onMessage(message);
        } catch (error) {
          logger.error({ err: error, payload: message.payload }, 'failed to handle a control-plane message');
        }
      });
      call.on('error', (error: grpc.ServiceError) => finish(`${error.code}: ${error.details}`));
      call.on('status', (status: grpc.StatusObject) => finish(`${status.code}: ${status.details}`));
      call.on('end', () => finish('the control plane ended the session'));

      const state = handler.hello();
      call.write({
        hello: {
          ...info,
          ...this.#options.health?.(),
          runningTaskIds: state.runningTaskIds,
          unacknowledgedResults: state.unacknowledgedResults,
        },
      });
    });
  }

  #client(server: string): AgentServiceClient {
    let client = this.#clients.get(server);
    if (!client) {
      client = createAgentClient(server, this.#options.credentials, this.#options.channelOptions);
      this.#clients.set(server, client);
    }
    return client;
  }
}

/** The bytes of a server-streaming download call, cancelled when `signal` aborts. */
function bytesOf(call: grpc.ClientReadableStream<{ data: Buffer }>, signal: AbortSignal): Readable {
  const onAbort = (): void => call.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  return Readable.from(
    (async function* chunks() {
      try {
        for await (const chunk of call as AsyncIterable<{ data: Buffer }>) yield chunk.data;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    })(),
  );
}
