/**
 * IncrementalScheduler must answer exactly as nextActions does (same starts and skips in the same
 * order, same outcome) after every change, over seeded random plans of plain steps and rolling
 * groups with failures, cancellations and results arriving in any order.
 */
import { describe, expect, it } from 'vitest';
import { IncrementalScheduler, nextActions } from '../../../services/engine/scheduler.ts';
import { targetKey, type Plan, type PlanStepInput } from '../../../services/engine/plan-types.ts';
import { TaskStatus } from '../../../services/core/index.ts';
import { group, machine, plan, seededRandom, step } from './plan-fixtures.ts';

function scenario(seed: number): { p: Plan; rnd: () => number } {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const tags = ['t1', 't2', 't3'];
  const machines = Array.from({ length: 1 + Math.floor(rnd() * 12) }, (_, i) =>
    machine(
      `${pick(['a', 'B', 'c', 'D'])}${i}`,
      tags.filter(() => rnd() < 0.4),
    ),
  );
  const steps: PlanStepInput[] = [];
  const groups = [];
  const stages = 1 + Math.floor(rnd() * 4);
  for (let s = 0; s < stages; s++) {
    const errorAction = () => pick(['Stop', 'ContinueOnError', 'Continue'] as const);
    if (rnd() < 0.5) {
      steps.push(
        step(`s${s}`, {
          errorAction: errorAction(),
          parallelMachines: rnd() < 0.5 ? 1 + Math.floor(rnd() * 4) : null,
          machineTagFilter: rnd() < 0.2 ? [{ tagIds: [pick(tags)] }] : [],
        }),
      );
      continue;
    }
    const machineOrder = pick(['MachineName', 'TagPriority'] as const);
    groups.push(
      group(`g${s}`, {
        windowSize: 1 + Math.floor(rnd() * 4),
        machineOrder,
        machineOrderTagIds: tags.filter(() => rnd() < 0.6),
        waitBetweenMachineGroups: machineOrder === 'TagPriority' && rnd() < 0.5,
        onMachineFailure: pick(['StopStep', 'ContinueToOtherMachines'] as const),
        onMemberFailure: pick(['SkipRestOnThisMachine', 'ContinueMembers'] as const),
        onNoTargets: pick(['Skip', 'Warn', 'Fail'] as const),
      }),
    );
    for (let m = 0; m < 1 + Math.floor(rnd() * 3); m++)
      steps.push(
        step(`g${s}m${m}`, {
          rollingGroupId: `g${s}`,
          errorAction: errorAction(),
          machineTagFilter: rnd() < 0.3 ? [{ tagIds: [pick(tags)] }] : [],
        }),
      );
  }
  return { p: plan({ steps, rollingGroups: groups, machines, organization: { maxParallelMachines: 4 } }), rnd };
}

describe('IncrementalScheduler', () => {
  it.each(Array.from({ length: 400 }, (_, i) => i + 1))('answers as nextActions does, seed %i', (seed) => {
    const { p, rnd } = scenario(seed);
    const truth = new Map<string, TaskStatus>();
    const incremental = new IncrementalScheduler(p, new Map());
    const set = (stepId: string, machineId: string, status: TaskStatus) => {
      truth.set(targetKey(stepId, machineId), status);
      incremental.set(stepId, machineId, status);
    };
    const running: Array<{ stepId: string; machineId: string }> = [];
    let asked = 0;
    for (let tick = 0; tick < 5_000; tick++) {
      const expected = nextActions(p, truth);
      const actual = incremental.next();
      asked++;
      expect(actual.start).toEqual(expected.start);
      expect(actual.skip).toEqual(expected.skip);
      expect(actual.deploymentOutcome).toEqual(expected.deploymentOutcome);
      if (expected.deploymentOutcome) {
        expect(running).toEqual([]);
        return;
      }
      // Sometimes the orchestrator asks again before writing what it was told (a retried advance).
      if (rnd() < 0.1) continue;
      for (const s of expected.skip) set(s.stepId, s.machineId, TaskStatus.Skipped);
      for (const s of expected.start) {
        set(s.stepId, s.machineId, TaskStatus.Running);
        running.push(s);
      }
      // Results arrive one at a time or several together, in any order.
      const ending = Math.min(running.length, rnd() < 0.5 ? 1 : 1 + Math.floor(rnd() * running.length));
      for (let i = 0; i < ending; i++) {
        const [done] = running.splice(Math.floor(rnd() * running.length), 1);
        const r = rnd();
        set(
          done!.stepId,
          done!.machineId,
          r < 0.15 ? TaskStatus.Failed : r < 0.2 ? TaskStatus.Cancelled : TaskStatus.Succeeded,
        );
      }
    }
    throw new Error(`no outcome after ${asked} questions`);
  });

  it('needs no walk over the fleet to refill a window of a wide rolling group', () => {
    const machines = Array.from({ length: 2_000 }, (_, i) => machine(`m${String(i).padStart(5, '0')}`));
    const p = plan({
      steps: [step('a', { rollingGroupId: 'g' })],
      rollingGroups: [group('g', { windowSize: 10 })],
      machines,
      organization: { maxParallelMachines: 10 },
    });
    const statuses = new Map<string, TaskStatus>();
    const reads = { count: 0 };
    // Counts the scheduler's reads of the statuses it owns.
    const counted = new Proxy(statuses, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property === 'get') reads.count++;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const incremental = new IncrementalScheduler(p, counted);
    let first = incremental.next();
    expect(first.start).toHaveLength(10);
    for (const s of first.start) incremental.set(s.stepId, s.machineId, TaskStatus.Running);
    // Through the middle of the fleet, one result and one refill at a time.
    for (let i = 0; i < 1_000; i++) {
      incremental.set('a', first.start[0]!.machineId, TaskStatus.Succeeded);
      reads.count = 0;
      const next = incremental.next();
      expect(next.start).toHaveLength(1);
      expect(reads.count).toBeLessThan(100);
      for (const s of next.start) incremental.set(s.stepId, s.machineId, TaskStatus.Running);
      first = { ...first, start: [...first.start.slice(1), ...next.start] };
    }
  });
});
