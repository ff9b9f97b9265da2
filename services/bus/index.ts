/** Public surface of the bus: the port, its messages and subjects, and the adapter factory. */
import type { Logger, Metrics } from '../core/index.ts';
import type { Bus, WorkTuning } from './bus.ts';
import { InProcessBus } from './in-process-bus.ts';
import { NatsJetStreamBus } from './nats-jetstream-bus.ts';

export { WORK_DEFAULTS, retryDelayMs } from './bus.ts';
export type {
  Bus,
  ConsumeWorkOptions,
  EventHandler,
  PublishWorkOptions,
  Subscription,
  WorkContext,
  WorkHandler,
  WorkResult,
  WorkTuning,
} from './bus.ts';
export { isMessageEnvelope } from './messages.ts';
export type {
  AdvanceDeploymentMessage,
  AgentUpgradeEvent,
  CancelTaskEvent,
  DeploymentChangedEvent,
  DeploymentLogsEvent,
  EventMessage,
  TasksDispatchedEvent,
  WorkMessage,
} from './messages.ts';
export { DEFAULT_BUS_PREFIX, EventSubject, WorkQueue, subjectMatches } from './subjects.ts';
export { InProcessBroker, InProcessBus } from './in-process-bus.ts';
export type { InProcessBusOptions } from './in-process-bus.ts';
export { NatsJetStreamBus } from './nats-jetstream-bus.ts';
export { NatsStreamConfigError, NatsWithoutJetStreamError, workStreamName } from './nats-work-stream.ts';
export type { NatsJetStreamBusOptions } from './nats-jetstream-bus.ts';

export interface BusConfig extends WorkTuning {
  /** NATS with JetStream (NATS_URL); null selects the in-process bus of the embedded mode. */
  natsUrl: string | null;
  /** Stream and subject prefix (default 'gantry'); distinct prefixes never see each other's messages. */
  prefix?: string;
  logger: Logger;
  /** Failed NATS publishes and fetches are counted here. */
  metrics?: Metrics;
}

/** Chooses the adapter: NATS JetStream when a URL is configured, the in-process bus otherwise. */
export async function createBus(config: BusConfig): Promise<Bus> {
  const { natsUrl, metrics, ...rest } = config;
  // The in-process bus has no network that can fail: nothing of it to count.
  if (natsUrl === null) return new InProcessBus(rest);
  return NatsJetStreamBus.connect({ ...rest, metrics, url: natsUrl });
}
