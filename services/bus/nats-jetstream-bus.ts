/**
 * The clustered bus: work over NATS JetStream, events over core NATS. Works on nats-server 2.9
 * (Debian's): one WorkQueue stream per prefix, one durable pull consumer per queue (its filter
 * subject is unique, which 2.9 requires on a WorkQueue stream), explicit acks, leases renewed with
 * `working()`, retries by `nak(delay)`, and exhausted messages removed by us because 2.9 leaves
 * them in the stream forever.
 */
import { connect, type NatsConnection, type Subscription as NatsSubscription } from '@nats-io/transport-node';
import {
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { createMetrics, toError, type Logger, type Metrics } from '../core/index.ts';
import {
  WORK_DEFAULTS,
  type Bus,
  type ConsumeWorkOptions,
  type EventHandler,
  type PublishWorkOptions,
  type Subscription,
  type WorkHandler,
  type WorkTuning,
} from './bus.ts';
import { isMessageEnvelope, type EventMessage, type WorkMessage } from './messages.ts';
import { settleWork, withWorkDefaults } from './settle-work.ts';
import { assertBusName, assertEventSubject, DEFAULT_BUS_PREFIX, eventSubject, workSubject } from './subjects.ts';
import { ensureWorkConsumer, ensureWorkStream, NatsWithoutJetStreamError, workStreamName } from './nats-work-stream.ts';

export interface NatsJetStreamBusOptions extends WorkTuning {
  url: string;
  logger: Logger;
  prefix?: string;
  /** Connection name shown by the NATS server's monitoring (default 'gantry'). */
  connectionName?: string;
  /** Where failed publishes and fetches are counted (gantry_bus_errors_total). */
  metrics?: Metrics;
}

// How long one pull request waits for messages before the loop re-issues it.
const FETCH_EXPIRES_MS = 5_000;
const FETCH_ERROR_PAUSE_MS = 1_000;

export class NatsJetStreamBus implements Bus {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #url: string;
  readonly #prefix: string;
  readonly #stream: string;
  readonly #tuning: Required<WorkTuning>;
  readonly #logger: Logger;
  readonly #subscriptions = new Set<Subscription>();
  readonly #consumers = new Map<string, Promise<void>>();
  readonly #watched = new Set<string>();
  #closed = false;
  #disconnected = false;
  #metrics: Metrics = createMetrics();

  private constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    url: string,
    prefix: string,
    tuning: Required<WorkTuning>,
    logger: Logger,
  ) {
    this.#nc = nc;
    this.#url = url;
    this.#jsm = jsm;
    this.#js = jetstream(nc);
    this.#prefix = prefix;
    this.#stream = workStreamName(prefix);
    this.#tuning = tuning;
    this.#logger = logger;
    void this.#watchStatus();
  }

  /** Follows the client's connection events so readiness can say "bus disconnected" without a round trip. */
  async #watchStatus(): Promise<void> {
    for await (const status of this.#nc.status()) {
      if (status.type === 'disconnect' || status.type === 'staleConnection') this.#disconnected = true;
      else if (status.type === 'reconnect') this.#disconnected = false;
    }
  }

  connected(): boolean {
    return !this.#closed && !this.#disconnected && !this.#nc.isClosed();
  }

  /** Connects, checks JetStream and creates (or adopts) the prefix's work stream. */
  static async connect(options: NatsJetStreamBusOptions): Promise<NatsJetStreamBus> {
    const prefix = options.prefix ?? DEFAULT_BUS_PREFIX;
    assertBusName('prefix', prefix);
    const tuning = withWorkDefaults(options, WORK_DEFAULTS);
    const logger = options.logger.child({ component: 'bus', bus: 'nats', prefix });
    const nc = await connect({
      servers: options.url,
      name: options.connectionName ?? 'gantry',
      // After the first connection succeeds, ride out NATS restarts instead of giving up.
      maxReconnectAttempts: -1,
    }).catch((error: unknown) => {
      throw new Error(`Cannot connect to NATS at ${options.url}: ${toError(error).message}`, { cause: error });
    });
    try {
      const jsm = await jetstreamManager(nc).catch((error: unknown) => {
        throw new NatsWithoutJetStreamError(options.url, { cause: error });
      });
      const bus = new NatsJetStreamBus(nc, jsm, options.url, prefix, tuning, logger);
      if (options.metrics) bus.#metrics = options.metrics;
      await ensureWorkStream(jsm, options.url, prefix, tuning.dedupWindowMs);
      return bus;
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  async publishWork(queue: string, message: WorkMessage, options: PublishWorkOptions = {}): Promise<void> {
    this.#assertOpen();
    assertBusName('queue', queue);
    await this.#js
      .publish(
        workSubject(this.#prefix, queue),
        JSON.stringify(message),
        options.id === undefined ? {} : { msgID: options.id },
      )
      .catch((error: unknown) => {
        this.#metrics.busError('publish_work');
        throw error;
      });
  }

  async consumeWork(queue: string, handler: WorkHandler, options: ConsumeWorkOptions = {}): Promise<Subscription> {
    this.#assertOpen();
    assertBusName('queue', queue);
    await this.#ensureConsumer(queue);
    const consumer = await this.#js.consumers.get(this.#stream, queue);
    const maxInFlight = Math.max(1, options.maxInFlight ?? 1);
    const logger = this.#logger.child({ queue });
    let closed = false;
    let inFlight = 0;
    let current: ConsumerMessages | null = null;
    let wakeSlot: (() => void) | null = null;

    const handle = (msg: JsMsg): void => {
      inFlight += 1;
      let payload: unknown;
      try {
        payload = msg.json();
      } catch {
        payload = undefined;
      }
      const context = { deliveryCount: msg.info.deliveryCount, working: () => void (closed || msg.working()) };
      void settleWork(handler, payload, context, this.#tuning, logger).then((outcome) => {
        inFlight -= 1;
        wakeSlot?.();
        if (closed) return; // abandoned: redelivered after ackWait, as if this process had died
        if (outcome.kind === 'ack') msg.ack();
        else if (outcome.kind === 'retry') msg.nak(outcome.delayMs);
        // term() WITHOUT a reason: 2.9 does not parse "+TERM <reason>" and would just redeliver.
        else msg.term();
      });
    };

    const loop = async (): Promise<void> => {
      while (!closed) {
        if (inFlight >= maxInFlight) {
          await new Promise<void>((resolve) => (wakeSlot = resolve));
          wakeSlot = null;
          continue;
        }
        try {
          // Ask only for free slots, so no message waits in a buffer while its lease runs out.
          const batch = await consumer.fetch({ max_messages: maxInFlight - inFlight, expires: FETCH_EXPIRES_MS });
          current = batch;
          // close() may have run while fetch() was starting, before there was anything to stop.
          if (closed) batch.stop();
          for await (const msg of batch) {
            if (closed) break;
            handle(msg);
          }
        } catch (error) {
          if (closed) break;
          this.#metrics.busError('consume');
          logger.warn({ err: toError(error) }, 'work fetch failed; retrying');
          await new Promise((resolve) => setTimeout(resolve, FETCH_ERROR_PAUSE_MS));
          // A NATS restart without its JetStream store loses the stream; put it back (idempotent).
          await this.#recreate(queue).catch((err: unknown) =>
            logger.warn({ err: toError(err) }, 'work stream recreation failed'),
          );
        }
      }
    };
    const running = loop();

    return this.#track(async () => {
      closed = true;
      current?.stop();
      wakeSlot?.();
      await running;
    });
  }

  async publishEvent(subject: string, message: EventMessage): Promise<void> {
    this.#assertOpen();
    assertEventSubject(subject, { allowWildcards: false });
    try {
      this.#nc.publish(eventSubject(this.#prefix, subject), JSON.stringify(message));
    } catch (error) {
      this.#metrics.busError('publish_event');
      throw error;
    }
  }

  async subscribeEvents(subjectPattern: string, handler: EventHandler): Promise<Subscription> {
    this.#assertOpen();
    assertEventSubject(subjectPattern, { allowWildcards: true });
    const offset = eventSubject(this.#prefix, '').length;
    const sub = this.#nc.subscribe(eventSubject(this.#prefix, subjectPattern), {
      callback: (error, msg) => {
        if (error) return this.#logger.warn({ err: error }, 'event subscription failed');
        const subject = msg.subject.slice(offset);
        let payload: unknown;
        try {
          payload = msg.json();
        } catch {
          payload = undefined;
        }
        if (!isMessageEnvelope(payload))
          return this.#logger.warn({ subject }, 'event dropped: not a { v, type } envelope');
        Promise.resolve()
          .then(() => handler(payload as EventMessage, subject))
          .catch((err: unknown) => this.#logger.warn({ subject, err: toError(err) }, 'event handler failed'));
      },
    });
    // Only after the server has seen the SUB will a publish from another connection reach us.
    await this.#nc.flush();
    return this.#track(async () => sub.unsubscribe());
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((s) => s.close()));
    // drain() sends the acks and naks still buffered before closing.
    await this.#nc.drain().catch(() => this.#nc.close());
  }

  async #recreate(queue: string): Promise<void> {
    if (this.#closed) return;
    await ensureWorkStream(this.#jsm, this.#url, this.#prefix, this.#tuning.dedupWindowMs);
    this.#consumers.delete(queue);
    await this.#ensureConsumer(queue);
  }

  /** Creates the queue's durable consumer once per bus; identical re-creation by other replicas is a no-op. */
  #ensureConsumer(queue: string): Promise<void> {
    let ready = this.#consumers.get(queue);
    if (!ready) {
      ready = this.#createConsumer(queue);
      ready.catch(() => this.#consumers.delete(queue));
      this.#consumers.set(queue, ready);
    }
    return ready;
  }

  async #createConsumer(queue: string): Promise<void> {
    await ensureWorkConsumer(this.#jsm, this.#prefix, queue, this.#tuning);
    if (!this.#watched.has(queue)) this.#watchExhausted(queue);
  }

  /** A message whose leases ran out maxDeliver times stays in a 2.9 WorkQueue stream: delete it. */
  #watchExhausted(queue: string): void {
    this.#watched.add(queue);
    const logger = this.#logger.child({ queue });
    const sub: NatsSubscription = this.#nc.subscribe(
      `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.#stream}.${queue}`,
      {
        callback: (error, msg) => {
          if (error) return;
          const advisory = msg.json<{ stream_seq?: number; deliveries?: number }>();
          if (typeof advisory.stream_seq !== 'number') return;
          // Every replica sees the advisory; only the one whose delete succeeds logs it.
          this.#jsm.streams
            .deleteMessage(this.#stream, advisory.stream_seq, false)
            .then((deleted) => {
              if (deleted)
                logger.error({ deliveryCount: advisory.deliveries }, 'work message dropped after max deliveries');
            })
            .catch(() => undefined);
        },
      },
    );
    this.#track(async () => sub.unsubscribe());
  }

  #track(closeOnce: () => Promise<void>): Subscription {
    let done = false;
    const subscription: Subscription = {
      close: async () => {
        if (done) return;
        done = true;
        this.#subscriptions.delete(subscription);
        await closeOnce();
      },
    };
    this.#subscriptions.add(subscription);
    return subscription;
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('Bus is closed');
  }
}
