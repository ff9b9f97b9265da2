/**
 * Runs a work handler and decides what happens to the message; shared by both adapters so a
 * throwing handler, a retry request and an exhausted message behave the same on every backend.
 */
import { toError, type Logger } from '../core/index.ts';
import { retryDelayMs, type WorkContext, type WorkHandler, type WorkTuning } from './bus.ts';
import { isMessageEnvelope, type WorkMessage } from './messages.ts';

export type Settlement = { kind: 'ack' } | { kind: 'retry'; delayMs: number } | { kind: 'drop' };

export async function settleWork(
  handler: WorkHandler,
  payload: unknown,
  context: WorkContext,
  tuning: Required<WorkTuning>,
  logger: Logger,
): Promise<Settlement> {
  const { deliveryCount } = context;
  if (!isMessageEnvelope(payload)) {
    logger.error({ deliveryCount }, 'work message dropped: not a { v, type } envelope');
    return { kind: 'drop' };
  }
  const fields = { type: payload.type, deliveryCount };
  let retryInMs: number;
  try {
    const result = await handler(payload as WorkMessage, context);
    if (result === 'ack') return { kind: 'ack' };
    if (!Number.isFinite(result.retryInMs)) throw new Error(`work handler returned ${JSON.stringify(result)}`);
    retryInMs = Math.max(0, Math.round(result.retryInMs));
  } catch (error) {
    retryInMs = retryDelayMs(deliveryCount, tuning);
    logger.warn({ ...fields, err: toError(error), retryInMs }, 'work handler failed');
  }
  if (deliveryCount >= tuning.maxDeliver) {
    // The bus gives up; the database still holds the work, and its reconciler may publish again.
    logger.error({ ...fields, maxDeliver: tuning.maxDeliver }, 'work message dropped after max deliveries');
    return { kind: 'drop' };
  }
  return { kind: 'retry', delayMs: retryInMs };
}

/** Picks the tuning fields out of adapter options, fills defaults and refuses nonsense values. */
export function withWorkDefaults(options: WorkTuning, defaults: Required<WorkTuning>): Required<WorkTuning> {
  const merged = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof WorkTuning>) {
    const value = options[key] ?? defaults[key];
    if (!Number.isFinite(value) || value < (key === 'maxDeliver' ? 1 : 0)) {
      throw new Error(`Invalid bus option ${key}: ${value}`);
    }
    merged[key] = value;
  }
  return merged;
}
