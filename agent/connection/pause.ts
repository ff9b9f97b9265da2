import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms`, or less if `signal` aborts first (stopping must not wait out a backoff); never throws. */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  await delay(ms, undefined, { signal }).catch(() => undefined);
}
