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
