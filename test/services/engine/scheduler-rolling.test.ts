import { describe, expect, it } from 'vitest';
import { nextActions } from '../../../services/engine/scheduler.ts';
import {
  targetKey,
  type PlanRollingGroupInput,
  type PlanStepInput,
  type RollingStage,
} from '../../../services/engine/plan-types.ts';
import {
  group,
  machine,
  machineStartOrder,
  plan,
  simulate,
  statusOf,
  step,
  type Simulation,
  type Verdict,
} from './plan-fixtures.ts';
import { type TaskStatus } from '../../../services/core/index.ts';

const state = (entries: Array<[string, string, TaskStatus]>): Map<string, TaskStatus> =>
  new Map(entries.map(([s, m, st]) => [targetKey(s, m), st]));
const six = ['f', 'E', 'd', 'C', 'b', 'A'].map((n) => machine(n));

function rollingPlan(
  g: Partial<PlanRollingGroupInput>,
  opts: { members?: Array<Partial<PlanStepInput>>; machines?: ReturnType<typeof machine>[]; after?: boolean } = {},
) {
  const members = (opts.members ?? [{}, {}]).map((o, i) => step(`m${i + 1}`, { rollingGroupId: 'g', ...o }));
  return plan({
    steps: [...members, ...(opts.after ? [step('after')] : [])],
    rollingGroups: [group('g', g)],
    machines: opts.machines ?? six,
  });
}

/** Each machine ran the group's members strictly in order, never two at once. */
function expectMembersInOrderPerMachine(sim: Simulation, stage: RollingStage): void {
  for (const m of stage.machines) {
    const own = sim.events.filter(
      (e) => e.machineId === m.machineId && stage.members.some((x) => x.stepId === e.stepId),
    );
    const starts = own.filter((e) => e.kind === 'start').map((e) => e.stepId);
    expect(starts).toEqual(m.stepIds.filter((s) => starts.includes(s)));
    let running = 0;
    for (const e of own) {
      running += e.kind === 'start' ? 1 : e.kind === 'end' ? -1 : 0;
      expect(running).toBeLessThanOrEqual(1);
    }
  }
}

describe('nextActions: rolling group windows', () => {
  it('runs strictly one machine at a time, every member on it before the next machine, with window 1', () => {
    const p = rollingPlan({ windowSize: 1 }, { machines: [machine('b'), machine('A'), machine('c')] });
    const sim = simulate(p);
    expect(sim.starts).toEqual(['m1@a', 'm2@a', 'm1@b', 'm2@b', 'm1@c', 'm2@c']);
    expect(sim.peakMachines.get(0)).toBe(1);
    expect(sim.outcome.status).toBe('Completed');
  });

  it('starts the next member on a machine, not the next machine, when a member finishes with window 1', () => {
    const p = rollingPlan({ windowSize: 1 });
    expect(nextActions(p, state([['m1', 'a', 'Succeeded']])).start).toEqual([
      { stageIndex: 0, stepId: 'm2', machineId: 'a' },
    ]);
    expect(nextActions(p, state([['m1', 'a', 'Running']])).start).toEqual([]);
    expect(
      nextActions(
        p,
        state([
          ['m1', 'a', 'Succeeded'],
          ['m2', 'a', 'Succeeded'],
        ]),
      ).start,
    ).toEqual([{ stageIndex: 0, stepId: 'm1', machineId: 'b' }]);
  });

  it('opens the window on its first machines at once', () => {
    const p = rollingPlan({ windowSize: 3 });
    expect(nextActions(p, new Map()).start.map((s) => `${s.stepId}@${s.machineId}`)).toEqual(['m1@a', 'm1@b', 'm1@c']);
  });

  it.each([
    { windowSize: 1, mode: 'all' as const },
    { windowSize: 1, mode: 'oldest' as const },
    { windowSize: 2, mode: 'all' as const },
    { windowSize: 2, mode: 'oldest' as const },
    { windowSize: 4, mode: 'oldest' as const },
    { windowSize: 6, mode: 'all' as const },
    { windowSize: 8, mode: 'oldest' as const },
  ])(
    'keeps at most $windowSize machines in progress, in name order, with window $windowSize finishing $mode',
    ({ windowSize, mode }) => {
      const p = rollingPlan({ windowSize }, { members: [{}, {}, {}] });
      const sim = simulate(p, undefined, mode);
      expect(sim.peakMachines.get(0)).toBe(Math.min(windowSize, 6));
      expect(machineStartOrder(sim)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      expect(sim.starts).toHaveLength(18);
      expectMembersInOrderPerMachine(sim, p.stages[0] as RollingStage);
    },
  );

  it('frees a window slot only when a machine has finished all of its members', () => {
    const p = rollingPlan({ windowSize: 2 });
    const a = nextActions(
      p,
      state([
        ['m1', 'a', 'Succeeded'],
        ['m1', 'b', 'Running'],
      ]),
    );
    expect(a.start).toEqual([{ stageIndex: 0, stepId: 'm2', machineId: 'a' }]);
    const b = nextActions(
      p,
      state([
        ['m1', 'a', 'Succeeded'],
        ['m2', 'a', 'Succeeded'],
        ['m1', 'b', 'Running'],
      ]),
    );
    expect(b.start).toEqual([{ stageIndex: 0, stepId: 'm1', machineId: 'c' }]);
  });

  it('runs on each machine only the members that apply to it', () => {
    const machines = [machine('web1', ['web']), machine('db1', ['db'])];
    const p = rollingPlan(
      { windowSize: 1 },
      {
        machines,
        members: [{}, { machineTagFilter: [{ tagIds: ['web'] }] }, { machineTagFilter: [{ tagIds: ['db'] }] }],
      },
    );
    const sim = simulate(p);
    expect(sim.starts).toEqual(['m1@db1', 'm3@db1', 'm1@web1', 'm2@web1']);
    expect(sim.skips).toEqual([]);
  });

  it('starts the stage after the group only when every machine finished the group', () => {
    const p = rollingPlan({ windowSize: 2 }, { after: true });
    const sim = simulate(p, undefined, 'oldest');
    const lastGroupEnd = Math.max(
      ...sim.events.filter((e) => e.kind === 'end' && e.stepId !== 'after').map((e) => e.tick),
    );
    const firstAfter = Math.min(
      ...sim.events.filter((e) => e.kind === 'start' && e.stepId === 'after').map((e) => e.tick),
    );
    expect(firstAfter).toBeGreaterThan(lastGroupEnd);
    expect(sim.finishedStages).toEqual([0, 1]);
  });
});

describe('nextActions: rolling group tag ranks', () => {
  // rank 0: b-t1, z-t1; rank 1: a-t2; rank 2 (no tag): c, d.
  const ranked = [
    machine('z-t1', ['t1']),
    machine('a-t2', ['t2']),
    machine('b-t1', ['t1', 't2']),
    machine('d'),
    machine('C'),
  ];
  const tagged = (wait: boolean, windowSize: number) =>
    rollingPlan(
      { windowSize, machineOrder: 'TagPriority', machineOrderTagIds: ['t1', 't2'], waitBetweenMachineGroups: wait },
      { machines: ranked },
    );

  it('starts machines rank by rank, untagged machines last', () => {
    const sim = simulate(tagged(false, 1));
    expect(machineStartOrder(sim)).toEqual(['b-t1', 'z-t1', 'a-t2', 'c', 'd']);
  });

  it.each([2, 3])(
    'finishes every machine of a rank before the next rank starts with waitBetweenMachineGroups and window %i',
    (windowSize) => {
      const p = tagged(true, windowSize);
      const stage = p.stages[0] as RollingStage;
      for (const mode of ['all', 'oldest'] as const) {
        const sim = simulate(p, undefined, mode);
        expect(machineStartOrder(sim)).toEqual(['b-t1', 'z-t1', 'a-t2', 'c', 'd']);
        for (const m of stage.machines) {
          const firstStart = sim.events.find((e) => e.kind === 'start' && e.machineId === m.machineId)!.tick;
          const lowerEnds = sim.events.filter(
            (e) => e.kind === 'end' && stage.machines.some((o) => o.machineId === e.machineId && o.rank < m.rank),
          );
          for (const e of lowerEnds) expect(firstStart).toBeGreaterThan(e.tick);
        }
        expect(sim.peakMachines.get(0)).toBeLessThanOrEqual(windowSize);
      }
    },
  );

  it('does not start the next rank while a machine of an earlier rank still runs with waitBetweenMachineGroups', () => {
    const p = tagged(true, 3);
    const s = state([
      ['m1', 'b-t1', 'Succeeded'],
      ['m2', 'b-t1', 'Succeeded'],
      ['m1', 'z-t1', 'Succeeded'],
      ['m2', 'z-t1', 'Running'],
    ]);
    expect(nextActions(p, s).start).toEqual([]);
  });

  it('fills the window across ranks without waitBetweenMachineGroups', () => {
    const p = tagged(false, 3);
    expect(nextActions(p, new Map()).start.map((s) => s.machineId)).toEqual(['b-t1', 'z-t1', 'a-t2']);
  });
});

describe('nextActions: rolling group failure policies', () => {
  const failOn =
    (stepId: string, machineId: string) =>
    (s: string, m: string): Verdict =>
      s === stepId && m === machineId ? 'Failed' : 'Succeeded';

  it('starts no further machine after a failure with StopStep, skipping the rest', () => {
    const p = rollingPlan(
      { windowSize: 1, onMachineFailure: 'StopStep', onMemberFailure: 'ContinueMembers' },
      { members: [{ errorAction: 'ContinueOnError' }, {}] },
    );
    const sim = simulate(p, failOn('m1', 'b'));
    expect(sim.starts).toEqual(['m1@a', 'm2@a', 'm1@b', 'm2@b']);
    expect(sim.skips).toEqual(['m1@c', 'm2@c', 'm1@d', 'm2@d', 'm1@e', 'm2@e', 'm1@f', 'm2@f']);
    expect(sim.events.filter((e) => e.kind === 'skip').every((e) => e.reason === 'GroupStopped')).toBe(true);
    // The group's policy does not decide the deployment: m1's errorAction does.
    expect(sim.outcome).toMatchObject({ status: 'Completed', errorCount: 1 });
  });

  it('lets machines already in progress finish the group after a failure with StopStep', () => {
    const p = rollingPlan(
      { windowSize: 2, onMachineFailure: 'StopStep', onMemberFailure: 'ContinueMembers' },
      { members: [{ errorAction: 'Continue' }, {}] },
    );
    const a = nextActions(
      p,
      state([
        ['m1', 'a', 'Failed'],
        ['m1', 'b', 'Succeeded'],
      ]),
    );
    expect(a.start.map((s) => `${s.stepId}@${s.machineId}`)).toEqual(['m2@a', 'm2@b']);
    expect(a.skip.map((s) => s.machineId)).toEqual(['c', 'c', 'd', 'd', 'e', 'e', 'f', 'f']);
  });

  it('carries on to every other machine after a failure with ContinueToOtherMachines', () => {
    const p = rollingPlan(
      { windowSize: 2, onMachineFailure: 'ContinueToOtherMachines', onMemberFailure: 'ContinueMembers' },
      { members: [{ errorAction: 'Continue' }, {}] },
    );
    const sim = simulate(p, failOn('m1', 'b'), 'oldest');
    expect(sim.starts).toHaveLength(12);
    expect(sim.skips).toEqual([]);
    expect(sim.outcome).toMatchObject({
      status: 'Completed',
      errorCount: 0,
      warningCount: 1,
      warnings: [{ stepId: 'm1', machineId: 'b', kind: 'TargetFailed' }],
    });
  });

  it('skips the rest of the members on the failed machine with SkipRestOnThisMachine', () => {
    const p = rollingPlan(
      { windowSize: 1, onMachineFailure: 'ContinueToOtherMachines', onMemberFailure: 'SkipRestOnThisMachine' },
      { members: [{}, { errorAction: 'ContinueOnError' }, {}], machines: [machine('a'), machine('b')] },
    );
    const sim = simulate(p, failOn('m2', 'a'));
    expect(sim.starts).toEqual(['m1@a', 'm2@a', 'm1@b', 'm2@b', 'm3@b']);
    expect(sim.skips).toEqual(['m3@a']);
    expect(sim.events.find((e) => e.kind === 'skip')?.reason).toBe('EarlierMemberFailed');
    expect(statusOf(sim, 'm3', 'a')).toBe('Skipped');
    expect(sim.outcome).toMatchObject({ status: 'Completed', errorCount: 1 });
  });

  it('runs the remaining members on the failed machine with ContinueMembers', () => {
    const p = rollingPlan(
      { windowSize: 1, onMachineFailure: 'ContinueToOtherMachines', onMemberFailure: 'ContinueMembers' },
      { members: [{ errorAction: 'Continue' }, {}, {}], machines: [machine('a'), machine('b')] },
    );
    const sim = simulate(p, failOn('m1', 'a'));
    expect(sim.starts).toEqual(['m1@a', 'm2@a', 'm3@a', 'm1@b', 'm2@b', 'm3@b']);
    expect(sim.skips).toEqual([]);
  });

  it('combines SkipRestOnThisMachine and StopStep: the failed machine and every later machine are skipped', () => {
    const p = rollingPlan(
      { windowSize: 1 },
      { members: [{ errorAction: 'ContinueOnError' }, {}], machines: [machine('a'), machine('b'), machine('c')] },
    );
    const sim = simulate(p, failOn('m1', 'b'));
    expect(sim.starts).toEqual(['m1@a', 'm2@a', 'm1@b']);
    expect(sim.events.filter((e) => e.kind === 'skip').map((e) => `${e.stepId}@${e.machineId}:${e.reason}`)).toEqual([
      'm2@b:EarlierMemberFailed',
      'm1@c:GroupStopped',
      'm2@c:GroupStopped',
    ]);
  });

  it('fails the deployment after the group finishes when a Stop member failed, even when the group carried on', () => {
    const p = rollingPlan(
      { windowSize: 1, onMachineFailure: 'ContinueToOtherMachines' },
      { members: [{}, {}], machines: [machine('a'), machine('b')], after: true },
    );
    const sim = simulate(p, failOn('m1', 'a'));
    expect(sim.starts).toEqual(['m1@a', 'm1@b', 'm2@b']);
    expect(sim.skips).toEqual(['m2@a', 'after@a', 'after@b']);
    expect(sim.outcome).toMatchObject({ status: 'Failed', errorCount: 1 });
    expect(sim.finishedStages).toEqual([0]);
  });

  it('fails an offline machine in the group at once and applies the machine policy', () => {
    const machines = [machine('a'), machine('b', [], { online: false }), machine('c')];
    const p = rollingPlan(
      { windowSize: 1, onMachineFailure: 'StopStep' },
      { members: [{ errorAction: 'ContinueOnError' }], machines },
    );
    const sim = simulate(p, (_, m) => (m === 'b' ? 'Failed' : 'Succeeded'));
    expect(sim.starts).toEqual(['m1@a', 'm1@b']);
    expect(sim.skips).toEqual(['m1@c']);
  });
});

describe('nextActions: rolling group with no targets', () => {
  const noMachine = { machineIdFilter: ['nobody'] };
  const cases = [
    {
      onNoTargets: 'Skip' as const,
      errorAction: 'Stop' as const,
      status: 'Completed',
      errors: 0,
      warnings: 0,
      afterRuns: true,
    },
    {
      onNoTargets: 'Warn' as const,
      errorAction: 'Stop' as const,
      status: 'Completed',
      errors: 0,
      warnings: 2,
      afterRuns: true,
    },
    {
      onNoTargets: 'Fail' as const,
      errorAction: 'Stop' as const,
      status: 'Failed',
      errors: 2,
      warnings: 0,
      afterRuns: false,
    },
    {
      onNoTargets: 'Fail' as const,
      errorAction: 'ContinueOnError' as const,
      status: 'Completed',
      errors: 2,
      warnings: 0,
      afterRuns: true,
    },
    {
      onNoTargets: 'Fail' as const,
      errorAction: 'Continue' as const,
      status: 'Completed',
      errors: 0,
      warnings: 2,
      afterRuns: true,
    },
  ];
  it.each(cases)(
    'ends $status with $errors error(s) and $warnings warning(s) for $onNoTargets with $errorAction members',
    ({ onNoTargets, errorAction, status, errors, warnings, afterRuns }) => {
      const p = rollingPlan(
        { onNoTargets },
        {
          members: [
            { ...noMachine, errorAction },
            { ...noMachine, errorAction },
          ],
          machines: [machine('a')],
          after: true,
        },
      );
      const sim = simulate(p);
      expect(sim.outcome).toMatchObject({ status, errorCount: errors, warningCount: warnings });
      for (const issue of [...sim.outcome.errors, ...sim.outcome.warnings])
        expect(issue).toMatchObject({ machineId: null, kind: 'NoTargets' });
      expect(sim.starts).toEqual(afterRuns ? ['after@a'] : []);
      expect(sim.skips).toEqual(afterRuns ? [] : ['after@a']);
    },
  );

  it('ignores members that do not run when failing for no targets', () => {
    const p = rollingPlan(
      { onNoTargets: 'Fail' },
      { members: [{ ...noMachine, errorAction: 'ContinueOnError' }, { disabled: true }], machines: [machine('a')] },
    );
    expect(simulate(p).outcome).toMatchObject({
      status: 'Completed',
      errorCount: 1,
      errors: [{ stepId: 'm1', machineId: null, kind: 'NoTargets' }],
    });
  });
});
