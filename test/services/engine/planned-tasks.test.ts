import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { PlannedTasks } from '../../../services/engine/planned-tasks.ts';
import { planTargets } from '../../../services/engine/planner.ts';
import { group, machine, plan, step } from './plan-fixtures.ts';

const machines = (count: number) => Array.from({ length: count }, (_, i) => machine(`m${String(i).padStart(5, '0')}`));
const rolling = (count: number) => {
  const fleet = machines(count);
  return {
    fleet,
    plan: plan({
      steps: [step('a', { rollingGroupId: 'g' }), step('b', { rollingGroupId: 'g' })],
      rollingGroups: [group('g')],
      machines: fleet,
    }),
  };
};

describe('PlannedTasks', () => {
  it("makes each target's task once: first() before, the rest after, in plan order", async () => {
    const { fleet, plan: p } = rolling(3);
    const planned = new PlannedTasks('d1', p, fleet);
    const firstTask = planned.first({ stageIndex: 0, stepId: 'b', machineId: 'm00001' })!;
    expect(planned.first({ stageIndex: 0, stepId: 'b', machineId: 'm00001' })).toBe(firstTask);
    expect(planned.first({ stageIndex: 0, stepId: 'a', machineId: 'not-read' })).toBeUndefined();
    expect(planned.made()).toEqual([firstTask]);
    expect(firstTask).toMatchObject({ deploymentId: 'd1', stepName: 'b', machineName: 'm00001', status: 'Pending' });

    const { all, byKey, rest } = await planned.all();
    expect(all.map((t) => `${t.stepId}@${t.machineId}`)).toEqual(
      planTargets(p).map((t) => `${t.stepId}@${t.machineId}`),
    );
    expect(all.filter((t) => t === firstTask)).toHaveLength(1);
    expect(rest).toHaveLength(5);
    expect(rest).not.toContain(firstTask);
    expect(new Set(all.map((t) => t.id)).size).toBe(6);
    expect(byKey.size).toBe(6);
  });

  it('all() lets the event loop turn between slices of 1,000; allNow() makes the same tasks at once', async () => {
    const { fleet, plan: p } = rolling(1_500); // 3,000 targets
    let turns = 0;
    let making = true;
    const counting = (async () => {
      while (making) {
        await nextTurn();
        turns++;
      }
    })();
    const made = await new PlannedTasks('d1', p, fleet).all();
    making = false;
    await counting;
    expect(made.all).toHaveLength(3_000);
    expect(turns).toBeGreaterThanOrEqual(3); // one per slice (without: 1)

    const now = new PlannedTasks('d1', p, fleet).allNow();
    expect(now.all.map((t) => `${t.stepId}@${t.machineId}`)).toEqual(made.all.map((t) => `${t.stepId}@${t.machineId}`));
    expect(now.rest).toHaveLength(3_000);
  });
});
