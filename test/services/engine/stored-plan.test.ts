/**
 * The stored form of a plan (services/engine/stored-plan.ts): whatever the planner makes reads back
 * exactly as it was, through JSON as PostgreSQL keeps it; plans stored before it read as they are.
 */
import { describe, expect, it } from 'vitest';
import type { Plan, PlanStepInput, RollingStage } from '../../../services/engine/plan-types.ts';
import { fromStoredPlan, toStoredPlan } from '../../../services/engine/stored-plan.ts';
import { group, machine, plan, seededRandom, step } from './plan-fixtures.ts';

/** As deployments.plan holds it: JSON text, parsed by node-postgres. */
const throughColumn = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** Plain steps and a rolling group, with tags, filters, offline machines and skipped members. */
function randomPlan(seed: number): Plan {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const tags = ['t1', 't2', 't3'];
  const filters = (): Partial<PlanStepInput> => ({
    machineTagFilter: rnd() < 0.4 ? [{ tagIds: [pick(tags)] }] : [],
    disabled: rnd() < 0.1,
    environmentIds: rnd() < 0.1 ? ['env-other'] : [],
  });
  const machines = Array.from({ length: Math.floor(rnd() * 12) }, (_, i) =>
    machine(
      `${pick(['a', 'B', 'c'])}${i}`,
      tags.filter(() => rnd() < 0.5),
      { online: rnd() < 0.8, enabled: rnd() < 0.95 },
    ),
  );
  const members = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, i) =>
    step(`m${i}`, { rollingGroupId: 'g', ...filters() }),
  );
  const byTag = rnd() < 0.5;
  return plan({
    steps: [step('before', filters()), ...members, step('after', { parallelMachines: 2, ...filters() })],
    rollingGroups: [
      group('g', {
        windowSize: 1 + Math.floor(rnd() * 4),
        machineOrder: byTag ? 'TagPriority' : 'MachineName',
        machineOrderTagIds: byTag ? tags.filter(() => rnd() < 0.6) : [],
      }),
    ],
    machines,
    request: rnd() < 0.2 ? { excludeStepNames: ['m0'] } : {},
  });
}

describe('the stored form of a plan', () => {
  it.each(Array.from({ length: 200 }, (_, i) => i + 1))('reads back exactly what was planned (seed %i)', (seed) => {
    const planned = randomPlan(seed);
    expect(fromStoredPlan(throughColumn(toStoredPlan(planned)))).toEqual(planned);
  });

  it('covers what it leaves out: offline machines, ranks, machines some members skip', () => {
    const seen = { offline: false, ranked: false, partial: false, skippedMember: false };
    for (let seed = 1; seed <= 200; seed++) {
      for (const stage of randomPlan(seed).stages) {
        const machines = stage.kind === 'Step' ? stage.targets : stage.machines;
        if (machines.some((m) => !m.online)) seen.offline = true;
        if (stage.kind !== 'RollingGroup') continue;
        if (stage.machines.some((m) => m.rank !== 0)) seen.ranked = true;
        if (stage.machines.some((m) => m.notApplicableStepIds.length > 0)) seen.partial = true;
        if (stage.members.some((m) => m.skip !== null)) seen.skippedMember = true;
      }
    }
    expect(seen).toEqual({ offline: true, ranked: true, partial: true, skippedMember: true });
  });

  it('stores a wide rolling group in under a third of the text of the plan itself', () => {
    // IDs as Gantry issues them (UUIDs).
    const stepId = '7d3e4a52-5b1f-4c6e-9a0d-2f8b1c9e4d70';
    const wide = plan({
      steps: [step(stepId, { name: 'Deploy', rollingGroupId: 'fleet' })],
      rollingGroups: [group('fleet', { windowSize: 500 })],
      machines: Array.from({ length: 10_000 }, (_, i) =>
        machine(`sim-${String(i).padStart(5, '0')}`, [], {
          machineId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        }),
      ),
      organization: { maxParallelMachines: 500 },
    });
    const stored = JSON.stringify(toStoredPlan(wide));
    expect(stored.length * 3).toBeLessThan(JSON.stringify(wide).length);
    const read = fromStoredPlan(JSON.parse(stored))!;
    expect(read).toEqual(wide);
    // Each machine its own list: one changed must not change the others.
    const machines = (read.stages[0] as RollingStage).machines;
    expect(machines[0]!.stepIds).not.toBe(machines[1]!.stepIds);
  });

  it('reads a plan stored before it as it is, and nothing as nothing', () => {
    const planned = randomPlan(7);
    expect(fromStoredPlan(throughColumn(planned))).toEqual(planned);
    expect(fromStoredPlan(null)).toBeNull();
  });

  it('refuses a form it does not know', () => {
    expect(() => fromStoredPlan({ ...toStoredPlan(randomPlan(3)), v: 3 })).toThrow(/stored in form 3/);
  });
});
