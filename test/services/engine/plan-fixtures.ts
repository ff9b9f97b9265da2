/**
 * Builders for planner/scheduler unit tests, and a tiny simulator that drives nextActions the way
 * the orchestrator will: apply starts and skips, let running targets finish, ask again.
 */
import { expect } from 'vitest';
import { nextActions } from '../../../services/engine/scheduler.ts';
import { targetKey, type DeploymentOutcome, type Plan, type SkipAction } from '../../../services/engine/plan-types.ts';
import { TaskStatus } from '../../../services/core/index.ts';

export { group, input, machine, plan, step } from '../../helpers/plan-input.ts';

export type Verdict = 'Succeeded' | 'Failed' | 'Cancelled';

/** mulberry32: a tiny deterministic PRNG, so a random scenario's failing seed can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SimulationEvent {
  tick: number;
  kind: 'start' | 'end' | 'skip';
  stepId: string;
  machineId: string;
  status?: TaskStatus;
  reason?: SkipAction['reason'];
}

export interface Simulation {
  events: SimulationEvent[];
  /** "step@machine" in start order. */
  starts: string[];
  skips: string[];
  /** Per stage index: the most machines ever in progress at once (started, not yet done). */
  peakMachines: Map<number, number>;
  /** Per stage index: the most targets ever running at once. */
  peakRunning: Map<number, number>;
  statuses: Map<string, TaskStatus>;
  outcome: DeploymentOutcome;
  finishedStages: number[];
}

/**
 * Runs a plan to its end. Each tick asks nextActions, applies it, then finishes running targets
 * ('all' of them, or only the 'oldest' one to interleave machines). `verdict` decides each result.
 */
export function simulate(
  p: Plan,
  verdict: (stepId: string, machineId: string) => Verdict = () => 'Succeeded',
  mode: 'all' | 'oldest' = 'all',
): Simulation {
  const statuses = new Map<string, TaskStatus>();
  const running: Array<{ stepId: string; machineId: string; stageIndex: number }> = [];
  const sim: Omit<Simulation, 'outcome' | 'finishedStages'> = {
    events: [],
    starts: [],
    skips: [],
    peakMachines: new Map(),
    peakRunning: new Map(),
    statuses,
  };
  for (let tick = 0; tick < 10_000; tick += 1) {
    const actions = nextActions(p, statuses);
    for (const s of actions.skip) {
      statuses.set(targetKey(s.stepId, s.machineId), TaskStatus.Skipped);
      sim.events.push({ tick, kind: 'skip', stepId: s.stepId, machineId: s.machineId, reason: s.reason });
      sim.skips.push(`${s.stepId}@${s.machineId}`);
    }
    for (const s of actions.start) {
      expect(statuses.get(targetKey(s.stepId, s.machineId)) ?? 'Pending').toBe('Pending');
      statuses.set(targetKey(s.stepId, s.machineId), TaskStatus.Running);
      running.push(s);
      sim.events.push({ tick, kind: 'start', stepId: s.stepId, machineId: s.machineId });
      sim.starts.push(`${s.stepId}@${s.machineId}`);
    }
    // Idempotency: asking again right after applying the answer changes nothing.
    const again = nextActions(p, statuses);
    expect(again.start).toEqual([]);
    expect(again.skip).toEqual([]);
    recordPeaks(p, statuses, sim);
    if (actions.deploymentOutcome) {
      expect(running).toEqual([]);
      return { ...sim, outcome: actions.deploymentOutcome, finishedStages: actions.finishedStages };
    }
    if (running.length === 0) throw new Error(`simulation stalled at tick ${tick}: nothing running and no outcome`);
    const done = mode === 'all' ? running.splice(0) : running.splice(0, 1);
    for (const d of done) {
      const status = verdict(d.stepId, d.machineId);
      statuses.set(targetKey(d.stepId, d.machineId), status);
      sim.events.push({ tick, kind: 'end', stepId: d.stepId, machineId: d.machineId, status });
    }
  }
  throw new Error('simulation did not end');
}

function recordPeaks(
  p: Plan,
  statuses: Map<string, TaskStatus>,
  sim: Omit<Simulation, 'outcome' | 'finishedStages'>,
): void {
  const st = (stepId: string, machineId: string): TaskStatus =>
    statuses.get(targetKey(stepId, machineId)) ?? TaskStatus.Pending;
  p.stages.forEach((stage, index) => {
    let machines = 0;
    let runningTargets = 0;
    if (stage.kind === 'Step') {
      runningTargets = stage.targets.filter((t) => st(stage.stepId, t.machineId) === 'Running').length;
      machines = runningTargets;
    } else {
      for (const m of stage.machines) {
        const s = m.stepIds.map((id) => st(id, m.machineId));
        const started = s.some((x) => x !== 'Pending' && x !== 'Skipped');
        const done = s.every((x) => x !== 'Pending' && x !== 'Running');
        if (started && !done) machines += 1;
        runningTargets += s.filter((x) => x === 'Running').length;
      }
    }
    sim.peakMachines.set(index, Math.max(sim.peakMachines.get(index) ?? 0, machines));
    sim.peakRunning.set(index, Math.max(sim.peakRunning.get(index) ?? 0, runningTargets));
  });
}

/** Machine IDs in the order their first target started. */
export function machineStartOrder(sim: Simulation, stepIds?: string[]): string[] {
  const seen: string[] = [];
  for (const e of sim.events) {
    if (e.kind === 'start' && (!stepIds || stepIds.includes(e.stepId)) && !seen.includes(e.machineId))
      seen.push(e.machineId);
  }
  return seen;
}

export function statusOf(sim: Simulation, stepId: string, machineId: string): TaskStatus {
  return sim.statuses.get(targetKey(stepId, machineId)) ?? TaskStatus.Pending;
}
