import { InvalidParameterError } from './errors.ts';

/** The one clock. Everything that needs "now" receives a Clock, so tests can control time. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** .NET ticks: 100 ns intervals since 0001-01-01T00:00:00Z. Exceeds 2^53, hence bigint. */
const TICKS_AT_UNIX_EPOCH = 621_355_968_000_000_000n;

export function dateToTicks(date: Date): bigint {
  return TICKS_AT_UNIX_EPOCH + BigInt(date.getTime()) * 10_000n;
}

export function ticksToDate(ticks: bigint): Date {
  return new Date(Number((ticks - TICKS_AT_UNIX_EPOCH) / 10_000n));
}

/** The largest value a PostgreSQL bigint (and a .NET tick) holds. */
export const MAX_INT64 = 9_223_372_036_854_775_807n;

/**
 * A tick (or change tick) sent as decimal text: exact (beyond 2^53) and within bigint, else 400
 * naming the parameter. Empty means "not given".
 */
export function parseTicks(raw: string | undefined, property: string): bigint | null {
  if (raw === undefined || raw === '') return null;
  const value = /^\d{1,19}$/.test(raw) ? BigInt(raw) : null;
  if (value === null || value > MAX_INT64) {
    throw new InvalidParameterError(`${property} must be a non-negative integer of at most 2^63-1`, [
      { property, messages: ['not a non-negative 64-bit integer'] },
    ]);
  }
  return value;
}
