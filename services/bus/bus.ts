/**
 * The `Bus` port: how the engine and gateway wake each other up across replicas. Two adapters
 * implement it (in-process-bus.ts, nats-jetstream-bus.ts) and one contract test proves both.
 *
 * Vocabulary:
 * - work queue: durable, at-least-once; one consumer group per queue across every replica, so a
 *   message goes to exactly one live consumer at a time. A handler MUST be idempotent: the same
 *   message can arrive again after a crash, an expired lease or a retry.
 * - lease: the time (ackWait) a consumer holds a delivered message before it is redelivered to
 *   someone else; `working()` renews it.
 * - event: fan-out to every subscriber on every replica, not durable. Missing one is harmless
 *   because the database holds the truth and pollers re-read it.
 */
import type { EventMessage, WorkMessage } from './messages.ts';

export interface WorkContext {
  /** 1 on the first delivery, 2 on the first redelivery, … */
  deliveryCount: number;
  /** Renews the lease: call it at intervals shorter than ackWait while handling a long message. */
  working(): void;
}

/** 'ack' removes the message; `retryInMs` makes it come back (to any consumer) after that delay. */
export type WorkResult = 'ack' | { retryInMs: number };

/** A handler that throws is retried with exponential backoff, up to the adapter's maxDeliver. */
export type WorkHandler = (message: WorkMessage, context: WorkContext) => Promise<WorkResult>;

/** Errors thrown by an event handler are logged and swallowed: events are best-effort. */
export type EventHandler = (message: EventMessage, subject: string) => void | Promise<void>;

export interface Subscription {
  /**
   * Stops delivery to this subscription. Messages its handlers have not finished are NOT acked:
   * a later ack is ignored and the message is redelivered after ackWait, exactly as if the
   * process had died — the DB lease, not the bus, decides who really owns the work.
   */
  close(): Promise<void>;
}

export interface PublishWorkOptions {
  /** Deduplicates publishes with the same id within the dedup window (JetStream Nats-Msg-Id). */
  id?: string;
}

export interface ConsumeWorkOptions {
  /** Messages this subscription handles at once (default 1). */
  maxInFlight?: number;
}

export interface Bus {
  /** Resolves once the message is durably accepted (or recognised as a duplicate). */
  publishWork(queue: string, message: WorkMessage, options?: PublishWorkOptions): Promise<void>;
  /** Resolves once the consumer exists, so anything published afterwards will reach it. */
  consumeWork(queue: string, handler: WorkHandler, options?: ConsumeWorkOptions): Promise<Subscription>;
  /** Subject relative to the prefix, without wildcards, e.g. EventSubject.taskCancel(id). */
  publishEvent(subject: string, message: EventMessage): Promise<void>;
  /** Pattern relative to the prefix; `*` matches one token and a trailing `>` the rest. */
  subscribeEvents(subjectPattern: string, handler: EventHandler): Promise<Subscription>;
  /** Closes every subscription of this bus and releases its connection. */
  close(): Promise<void>;
  /** False while the connection to the broker is down (or after close): readiness reports it. */
  connected(): boolean;
}

/** Tuning shared by both adapters; defaults suit production, tests shorten them. */
export interface WorkTuning {
  /** Lease on a delivered message before redelivery (default 30 000). */
  ackWaitMs?: number;
  /** Deliveries before a message is dropped and logged (default 10). */
  maxDeliver?: number;
  /** First retry delay after a handler throws; doubles per delivery (default 1 000). */
  retryBaseMs?: number;
  /** Cap on that delay (default 60 000). */
  retryMaxMs?: number;
  /** Window in which a repeated publish id is dropped (default 120 000). */
  dedupWindowMs?: number;
}

export const WORK_DEFAULTS = {
  ackWaitMs: 30_000,
  maxDeliver: 10,
  retryBaseMs: 1_000,
  retryMaxMs: 60_000,
  dedupWindowMs: 120_000,
} as const satisfies Required<WorkTuning>;

/** Delay before retrying a message whose handler threw on delivery `deliveryCount`. */
export function retryDelayMs(deliveryCount: number, tuning: Required<WorkTuning>): number {
  const exponent = Math.min(Math.max(deliveryCount - 1, 0), 20);
  return Math.min(tuning.retryBaseMs * 2 ** exponent, tuning.retryMaxMs);
}
