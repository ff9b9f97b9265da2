/**
 * Creates (or adopts) the JetStream objects behind a prefix's work queues and checks that the
 * server really applied them: nats-server 2.9 silently drops settings it does not know.
 */
import { nanos } from '@nats-io/transport-node';
import { AckPolicy, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { WorkTuning } from './bus.ts';
import { workSubject } from './subjects.ts';

/** Startup failure: the server runs without JetStream, so work could not be queued durably. */
export class NatsWithoutJetStreamError extends Error {
  constructor(url: string, options?: { cause?: unknown }) {
    super(`NATS without JetStream at ${url}: start nats-server with -js (or set jetstream {} in its config)`, options);
    this.name = 'NatsWithoutJetStreamError';
  }
}

/** Startup failure: the work stream exists but the server kept a configuration we cannot rely on. */
export class NatsStreamConfigError extends Error {
  constructor(stream: string, detail: string) {
    super(`NATS stream ${stream} is not usable as a work queue: ${detail}; delete it or fix the server`);
    this.name = 'NatsStreamConfigError';
  }
}

/** Name of the WorkQueue stream that holds a prefix's work (stream names cannot contain dots). */
export function workStreamName(prefix: string): string {
  return `${prefix}_work`;
}

/** One WorkQueue stream per prefix holding `<prefix>.work.>`; idempotent across replicas. */
export async function ensureWorkStream(
  jsm: JetStreamManager,
  url: string,
  prefix: string,
  dedupWindowMs: number,
): Promise<void> {
  const name = workStreamName(prefix);
  const config = {
    name,
    subjects: [workSubject(prefix, '>')],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(dedupWindowMs),
  };
  let info;
  try {
    info = await jsm.streams.add(config);
  } catch (error) {
    // 10058: the stream exists with another configuration (e.g. a different dedup window).
    if (!(error instanceof JetStreamApiError) || error.code !== 10058) throw error;
    info = await jsm.streams.update(name, config);
  }
  // Trust only what the server reports back.
  const actual = info.config;
  if (!actual) throw new NatsWithoutJetStreamError(url);
  if (actual.retention !== RetentionPolicy.Workqueue) {
    throw new NatsStreamConfigError(name, `retention is ${actual.retention}, expected workqueue`);
  }
  if (!actual.subjects?.includes(config.subjects[0] ?? '')) {
    throw new NatsStreamConfigError(name, `subjects are ${JSON.stringify(actual.subjects)}`);
  }
  if (actual.duplicate_window !== config.duplicate_window) {
    throw new NatsStreamConfigError(name, 'the duplicate window was not applied');
  }
}

/** One durable pull consumer per queue; its filter subject is unique, as 2.9 requires on a WorkQueue stream. */
export async function ensureWorkConsumer(
  jsm: JetStreamManager,
  prefix: string,
  queue: string,
  tuning: Required<WorkTuning>,
): Promise<void> {
  const { ackWaitMs, maxDeliver } = tuning;
  // Deliberately no consumer `backoff` list. On 2.9.10 a nak(delay) is scheduled as
  // "now - ack_wait + delay" and then checked against backoff[n] instead of ack_wait, so with
  // backoff [1 s, 2 s, 4 s] a 100 ms retry came back after 1.1 s and a 200 ms one after 3.2 s
  // (measured). Retry backoff is therefore applied by us through nak(delay); an expired lease
  // (crashed consumer) is redelivered after ack_wait, at most max_deliver times in all.
  await jsm.consumers.add(workStreamName(prefix), {
    durable_name: queue,
    filter_subject: workSubject(prefix, queue),
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ackWaitMs),
    max_deliver: maxDeliver,
  });
}
