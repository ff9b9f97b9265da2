/**
 * The embedded default: the Bus semantics in memory. Several InProcessBus instances may share one
 * InProcessBroker to stand in for replicas (tests, single-process clusters); closing one behaves
 * like that replica dying: its unfinished messages come back to the others after ackWait.
 */
import { toError, type Logger } from '../core/index.ts';
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
import type { EventMessage, WorkMessage } from './messages.ts';
import { settleWork, withWorkDefaults } from './settle-work.ts';
import { assertBusName, assertEventSubject, DEFAULT_BUS_PREFIX, subjectMatches } from './subjects.ts';

interface Entry {
  payload: unknown;
  deliveryCount: number;
}

interface Consumer {
  handler: WorkHandler;
  maxInFlight: number;
  inFlight: number;
  closed: boolean;
  logger: Logger;
}

interface QueueState {
  ready: Entry[];
  consumers: Consumer[];
  nextConsumer: number;
  /** Publish id → expiry (ms). Insertion order is expiry order, so pruning stops at the first live id. */
  seenIds: Map<string, number>;
}

interface EventSubscriber {
  pattern: string;
  handler: EventHandler;
  closed: boolean;
  logger: Logger;
}

/** Shared state of every InProcessBus attached to it: queues and event subscribers per prefix. */
export class InProcessBroker {
  readonly queues = new Map<string, QueueState>();
  readonly subscribers = new Map<string, Set<EventSubscriber>>();
}

export interface InProcessBusOptions extends WorkTuning {
  logger: Logger;
  prefix?: string;
  /** Share one broker between buses to model several replicas; a private one by default. */
  broker?: InProcessBroker;
}

// Timers never keep the process alive: when nothing else runs there is nobody to deliver to.
function later(ms: number, run: () => void): void {
  setTimeout(run, ms).unref();
}

// A JSON round trip, as a real bus would do, so publisher and handler never share an object.
function copy(message: unknown): unknown {
  return JSON.parse(JSON.stringify(message)) as unknown;
}

export class InProcessBus implements Bus {
  readonly #prefix: string;
  readonly #broker: InProcessBroker;
  readonly #tuning: Required<WorkTuning>;
  readonly #logger: Logger;
  readonly #subscriptions = new Set<Subscription>();
  #closed = false;

  constructor(options: InProcessBusOptions) {
    this.#prefix = options.prefix ?? DEFAULT_BUS_PREFIX;
    assertBusName('prefix', this.#prefix);
    this.#broker = options.broker ?? new InProcessBroker();
    this.#tuning = withWorkDefaults(options, WORK_DEFAULTS);
    this.#logger = options.logger.child({ component: 'bus', bus: 'in-process', prefix: this.#prefix });
  }

  async publishWork(queue: string, message: WorkMessage, options: PublishWorkOptions = {}): Promise<void> {
    this.#assertOpen();
    const state = this.#queue(queue);
    if (options.id !== undefined && this.#isDuplicate(state, options.id)) return;
    state.ready.push({ payload: copy(message), deliveryCount: 0 });
    this.#dispatch(state, queue);
  }

  async consumeWork(queue: string, handler: WorkHandler, options: ConsumeWorkOptions = {}): Promise<Subscription> {
    this.#assertOpen();
    const state = this.#queue(queue);
    const consumer: Consumer = {
      handler,
      maxInFlight: Math.max(1, options.maxInFlight ?? 1),
      inFlight: 0,
      closed: false,
      logger: this.#logger.child({ queue }),
    };
    state.consumers.push(consumer);
    const subscription = this.#track(async () => {
      consumer.closed = true;
      state.consumers = state.consumers.filter((c) => c !== consumer);
    });
    this.#dispatch(state, queue);
    return subscription;
  }

  async publishEvent(subject: string, message: EventMessage): Promise<void> {
    this.#assertOpen();
    assertEventSubject(subject, { allowWildcards: false });
    for (const subscriber of this.#broker.subscribers.get(this.#prefix) ?? []) {
      if (!subjectMatches(subscriber.pattern, subject)) continue;
      const payload = copy(message) as EventMessage;
      // Asynchronous like a network hop, and re-checked so a closed subscription gets nothing.
      setImmediate(() => {
        if (subscriber.closed) return;
        Promise.resolve()
          .then(() => subscriber.handler(payload, subject))
          .catch((error: unknown) => subscriber.logger.warn({ subject, err: toError(error) }, 'event handler failed'));
      });
    }
  }

  async subscribeEvents(subjectPattern: string, handler: EventHandler): Promise<Subscription> {
    this.#assertOpen();
    assertEventSubject(subjectPattern, { allowWildcards: true });
    let set = this.#broker.subscribers.get(this.#prefix);
    if (!set) this.#broker.subscribers.set(this.#prefix, (set = new Set()));
    const subscriber: EventSubscriber = { pattern: subjectPattern, handler, closed: false, logger: this.#logger };
    set.add(subscriber);
    const subscribers = set;
    return this.#track(async () => {
      subscriber.closed = true;
      subscribers.delete(subscriber);
    });
  }

  connected(): boolean {
    return !this.#closed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((s) => s.close()));
  }

  #track(closeOnce: () => Promise<void>): Subscription {
    let closed = false;
    const subscription: Subscription = {
      close: async () => {
        if (closed) return;
        closed = true;
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

  #queue(queue: string): QueueState {
    assertBusName('queue', queue);
    const key = `${this.#prefix}/${queue}`;
    let state = this.#broker.queues.get(key);
    if (!state) {
      state = { ready: [], consumers: [], nextConsumer: 0, seenIds: new Map() };
      this.#broker.queues.set(key, state);
    }
    return state;
  }

  #isDuplicate(state: QueueState, id: string): boolean {
    const now = Date.now();
    for (const [seenId, expiresAt] of state.seenIds) {
      if (expiresAt > now) break;
      state.seenIds.delete(seenId);
    }
    if (state.seenIds.has(id)) return true;
    state.seenIds.set(id, now + this.#tuning.dedupWindowMs);
    return false;
  }

  /** Hands ready messages to consumers with free capacity, round-robin. */
  #dispatch(state: QueueState, queue: string): void {
    while (state.ready.length > 0) {
      const consumer = this.#nextFreeConsumer(state);
      if (!consumer) return;
      const entry = state.ready.shift();
      if (entry) this.#deliver(state, queue, consumer, entry);
    }
  }

  #nextFreeConsumer(state: QueueState): Consumer | undefined {
    const count = state.consumers.length;
    for (let i = 0; i < count; i++) {
      const consumer = state.consumers[(state.nextConsumer + i) % count];
      if (consumer && !consumer.closed && consumer.inFlight < consumer.maxInFlight) {
        state.nextConsumer = (state.nextConsumer + i + 1) % count;
        return consumer;
      }
    }
    return undefined;
  }

  #deliver(state: QueueState, queue: string, consumer: Consumer, entry: Entry): void {
    entry.deliveryCount += 1;
    consumer.inFlight += 1;
    const tuning = this.#tuning;
    let settled = false;
    let leaseTimer = setTimeout(() => expire(), tuning.ackWaitMs).unref();
    const release = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(leaseTimer);
      consumer.inFlight -= 1;
      return true;
    };
    // The lease ran out (handler too slow, or its subscription closed): someone else gets it.
    const expire = (): void => {
      if (!release()) return;
      if (entry.deliveryCount >= tuning.maxDeliver) {
        consumer.logger.error({ deliveryCount: entry.deliveryCount }, 'work message dropped after max deliveries');
      } else {
        state.ready.push(entry);
      }
      this.#dispatch(state, queue);
    };
    const context = {
      deliveryCount: entry.deliveryCount,
      working: () => {
        if (settled || consumer.closed) return;
        clearTimeout(leaseTimer);
        leaseTimer = setTimeout(() => expire(), tuning.ackWaitMs).unref();
      },
    };
    void settleWork(consumer.handler, copy(entry.payload), context, tuning, consumer.logger).then((outcome) => {
      // A closed consumer's late answer is ignored, as a dead process's would be.
      if (consumer.closed || !release()) return;
      if (outcome.kind === 'retry') {
        later(outcome.delayMs, () => {
          state.ready.push(entry);
          this.#dispatch(state, queue);
        });
      }
      this.#dispatch(state, queue);
    });
  }
}
