// How often the agents connected to one replica send Heartbeat. Below a replica's cap every agent
// beats at the base interval (15 s). Above it the interval grows with the fleet, so the replica
// takes at most `perSecond` heartbeats a second (as Nomad caps its servers' heartbeats by
// stretching the nodes' TTL): each heartbeat costs ~135 µs of CPU on this project's VM, nearly all
// of it TLS, HTTP/2 and protobuf (bench/README, nineteenth session), so at 10,000 agents the fixed
// 15 s was 667 a second and most of an idle replica's CPU. The interval never passes `maxMs`, which
// keeps several beats inside the "online" window and the "agent lost" timeout: past that fleet size
// liveness wins over the cap. Dead connections are found by the gateway's pings of silent
// connections (connection-watch.ts), sent as much later as the interval grew: one per beat, and a
// dead agent found within about one interval (~15 s under the cap, at most 30 s above it).
import { HEARTBEAT_WINDOW_MS } from '../domain/index.ts';

/** The interval is told again only when it moved by at least this fraction (no churn near a bound). */
const REPACE_FRACTION = 0.1;

export interface HeartbeatPace {
  /** The interval while the fleet is under the cap. */
  readonly baseMs: number;
  /** The longest interval, whatever the fleet. */
  readonly maxMs: number;
  /** Heartbeats a second this replica aims to take at most (Infinity: the base interval always). */
  readonly perSecond: number;
}

/**
 * The pace when a task is lost after `agentLostMs` of silence: several beats fit in that window (a
 * quiet, healthy step never looks lost) and in the "online" window, at most every 15 s below the
 * cap and every 30 s above it.
 */
export function heartbeatPaceFor(agentLostMs: number, perSecond: number): HeartbeatPace {
  const baseMs = Math.min(15_000, Math.max(250, Math.floor(agentLostMs / 4)));
  const maxMs = Math.max(baseMs, Math.min(Math.floor(agentLostMs / 4), Math.floor(HEARTBEAT_WINDOW_MS / 3)));
  return { baseMs, maxMs, perSecond };
}

/** A fixed interval: no cap (tests, and gateways built without one). */
export function fixedHeartbeatPace(intervalMs: number): HeartbeatPace {
  return { baseMs: intervalMs, maxMs: intervalMs, perSecond: Number.POSITIVE_INFINITY };
}

/** The interval for this many connected agents. */
export function heartbeatIntervalOf(pace: HeartbeatPace, connectedAgents: number): number {
  const spread = Math.ceil((connectedAgents * 1000) / pace.perSecond);
  return Math.min(pace.maxMs, Math.max(pace.baseMs, spread));
}

/** Whether an agent told `toldMs` should be told `wantedMs` instead. */
export function isWorthRepacing(toldMs: number, wantedMs: number): boolean {
  return Math.abs(wantedMs - toldMs) >= toldMs * REPACE_FRACTION;
}
