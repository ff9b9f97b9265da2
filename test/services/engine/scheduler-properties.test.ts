/**
 * Seeded random rolling groups and results, checked against the invariants of spec §2.5 — the
 * table-driven tests pin exact orders; these look for combinations nobody thought to write down.
 */
import { describe, expect, it } from 'vitest';
import type { PlanRollingGroupInput, RollingStage } from '../../../services/engine/plan-types.ts';
import {
  group,
  machine,
  machineStartOrder,
  plan,
  seededRandom,
  simulate,
  step,
  type Verdict,
} from './plan-fixtures.ts';

function scenario(seed: number) {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const tags = ['t1', 't2', 't3'];
  const machines = Array.from({ length: 1 + Math.floor(rnd() * 9) }, (_, i) =>
    machine(
      `${pick(['a', 'B', 'c', 'D'])}${i}`,
      tags.filter(() => rnd() < 0.4),
      { online: rnd() < 0.9 },
    ),
  );
  const settings: Partial<PlanRollingGroupInput> = {
    windowSize: 1 + Math.floor(rnd() * 4),
    machineOrder: pick(['MachineName', 'TagPriority'] as const),
    machineOrderTagIds: tags.filter(() => rnd() < 0.6),
    onMachineFailure: pick(['StopStep', 'ContinueToOtherMachines'] as const),
    onMemberFailure: pick(['SkipRestOnThisMachine', 'ContinueMembers'] as const),
    onNoTargets: pick(['Skip', 'Warn', 'Fail'] as const),
  };
  settings.waitBetweenMachineGroups = settings.machineOrder === 'TagPriority' && rnd() < 0.5;
  const members = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, i) =>
    step(`m${i}`, {
      rollingGroupId: 'g',
      errorAction: pick(['Stop', 'ContinueOnError', 'Continue'] as const),
      machineTagFilter: rnd() < 0.3 ? [{ tagIds: [pick(tags)] }] : [],
    }),
  );
  const p = plan({
    steps: [...members, step('after')],
    rollingGroups: [group('g', settings)],
    machines,
    organization: { maxParallelMachines: 3 },
  });
  const failures = new Set<string>();
  const verdict = (s: string, m: string): Verdict => {
    const offline = machines.find((x) => x.machineId === m)?.online === false;
    if (offline || rnd() < 0.15) failures.add(`${s}@${m}`);
    return failures.has(`${s}@${m}`) ? 'Failed' : 'Succeeded';
  };
  return { p, stage: p.stages[0] as RollingStage, verdict, failures, mode: pick(['all', 'oldest'] as const) };
}

describe('nextActions: rolling group invariants over random scenarios', () => {
  it.each(Array.from({ length: 300 }, (_, i) => i + 1))('holds for seed %i', (seed) => {
    const { p, stage, verdict, failures, mode } = scenario(seed);
    const sim = simulate(p, verdict, mode);

    // The window (itself never above maxParallelMachines) is never exceeded.
    expect(stage.windowSize).toBeLessThanOrEqual(3);
    expect(sim.peakMachines.get(0) ?? 0).toBeLessThanOrEqual(stage.windowSize);

    // Every target ends in a final state.
    for (const m of stage.machines)
      for (const s of m.stepIds)
        expect(['Succeeded', 'Failed', 'Skipped']).toContain(sim.statuses.get(`${s}\u0000${m.machineId}`));

    // Machines start in plan order; each runs its members in order, one at a time.
    const order = stage.machines.map((m) => m.machineId);
    const started = machineStartOrder(
      sim,
      stage.members.map((m) => m.stepId),
    );
    expect(started).toEqual(order.filter((id) => started.includes(id)));
    for (const m of stage.machines) {
      const own = sim.events.filter((e) => e.machineId === m.machineId && e.stepId !== 'after');
      const starts = own.filter((e) => e.kind === 'start').map((e) => e.stepId);
      expect(starts).toEqual(m.stepIds.filter((s) => starts.includes(s)));
      const firstFail = own.find((e) => e.kind === 'end' && e.status === 'Failed');
      if (firstFail && stage.onMemberFailure === 'SkipRestOnThisMachine') {
        expect(own.filter((e) => e.kind === 'start' && e.tick > firstFail.tick)).toEqual([]);
      }
    }

    // With waitBetweenMachineGroups no machine starts before every lower-rank machine ended.
    const firstStartTick = (id: string) =>
      sim.events.find((e) => e.kind === 'start' && e.machineId === id && e.stepId !== 'after')?.tick;
    if (stage.waitBetweenMachineGroups) {
      for (const m of stage.machines) {
        const t = firstStartTick(m.machineId);
        if (t === undefined) continue;
        const lower = sim.events.filter(
          (e) =>
            e.kind === 'end' &&
            e.stepId !== 'after' &&
            stage.machines.some((o) => o.machineId === e.machineId && o.rank < m.rank),
        );
        for (const e of lower) expect(t).toBeGreaterThan(e.tick);
      }
    }

    // StopStep: no new machine starts after the first failure in the group.
    const groupFailure = sim.events.find((e) => e.kind === 'end' && e.status === 'Failed' && e.stepId !== 'after');
    if (groupFailure && stage.onMachineFailure === 'StopStep') {
      for (const m of stage.machines) {
        const t = firstStartTick(m.machineId);
        if (t !== undefined) expect(t).toBeLessThanOrEqual(groupFailure.tick);
      }
    }
    if (stage.onMachineFailure === 'ContinueToOtherMachines') expect(started).toEqual(order);

    // The deployment fails exactly when a Stop member failed (or failed for lack of targets).
    const stopMembers = stage.members.filter((m) => m.errorAction === 'Stop').map((m) => m.stepId);
    const stopFailed =
      [...failures].some((f) => stopMembers.includes(f.split('@')[0] ?? '') && !f.startsWith('after@')) ||
      (stage.noTargets === 'Fail' && stopMembers.length > 0);
    const afterFailed = [...failures].some((f) => f.startsWith('after@'));
    expect(sim.outcome.status).toBe(stopFailed || afterFailed ? 'Failed' : 'Completed');
    if (stopFailed) expect(sim.starts.some((s) => s.startsWith('after@'))).toBe(false);
  });
});
