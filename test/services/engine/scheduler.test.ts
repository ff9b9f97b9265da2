import { describe, expect, it } from 'vitest';
import { isFinished, nextActions } from '../../../services/engine/scheduler.ts';
import { targetKey } from '../../../services/engine/plan-types.ts';
import { group, machine, plan, simulate, statusOf, step, type Verdict } from './plan-fixtures.ts';
import { type ErrorAction, type TaskStatus } from '../../../services/core/index.ts';

const five = ['e', 'D', 'c', 'B', 'a'].map((n) => machine(n));
const state = (entries: Array<[string, string, TaskStatus]>): Map<string, TaskStatus> =>
  new Map(entries.map(([s, m, st]) => [targetKey(s, m), st]));

describe('nextActions: plain steps', () => {
  it('starts the first targets by name up to the parallelism when nothing ran yet', () => {
    const p = plan({ steps: [step('s1', { parallelMachines: 2 })], machines: five });
    expect(nextActions(p, new Map())).toEqual({
      start: [
        { stageIndex: 0, stepId: 's1', machineId: 'a' },
        { stageIndex: 0, stepId: 's1', machineId: 'b' },
      ],
      skip: [],
      finishedStages: [],
    });
  });

  it('starts the next pending target when one running target finishes', () => {
    const p = plan({ steps: [step('s1', { parallelMachines: 2 })], machines: five });
    const a = nextActions(
      p,
      state([
        ['s1', 'a', 'Succeeded'],
        ['s1', 'b', 'Running'],
      ]),
    );
    expect(a.start).toEqual([{ stageIndex: 0, stepId: 's1', machineId: 'c' }]);
  });

  it('starts nothing while the parallelism is used up', () => {
    const p = plan({ steps: [step('s1', { parallelMachines: 2 })], machines: five });
    expect(
      nextActions(
        p,
        state([
          ['s1', 'a', 'Running'],
          ['s1', 'b', 'Running'],
        ]),
      ).start,
    ).toEqual([]);
  });

  it.each([
    { parallelMachines: 1, max: 8, peak: 1 },
    { parallelMachines: 2, max: 8, peak: 2 },
    { parallelMachines: null, max: 3, peak: 3 },
    { parallelMachines: null, max: 8, peak: 5 },
    { parallelMachines: 10, max: 4, peak: 4 },
  ])(
    'never runs more than $peak at once with parallelMachines $parallelMachines and maximum $max',
    ({ parallelMachines, max, peak }) => {
      for (const mode of ['all', 'oldest'] as const) {
        const sim = simulate(
          plan({
            steps: [step('s1', { parallelMachines })],
            machines: five,
            organization: { maxParallelMachines: max },
          }),
          undefined,
          mode,
        );
        expect(sim.peakRunning.get(0)).toBe(peak);
        expect(sim.starts).toEqual(['s1@a', 's1@b', 's1@c', 's1@d', 's1@e']);
        expect(sim.outcome).toMatchObject({ status: 'Completed', errorCount: 0, warningCount: 0 });
      }
    },
  );

  it('runs stages in order: the next step starts only when every target of the previous one is done', () => {
    const p = plan({ steps: [step('s1'), step('s2')], machines: five });
    const sim = simulate(p, undefined, 'oldest');
    const lastOfS1 = Math.max(...sim.events.filter((e) => e.kind === 'end' && e.stepId === 's1').map((e) => e.tick));
    const firstOfS2 = Math.min(...sim.events.filter((e) => e.kind === 'start' && e.stepId === 's2').map((e) => e.tick));
    expect(firstOfS2).toBeGreaterThan(lastOfS1);
    expect(
      nextActions(p, state(five.map((m) => ['s1', m.machineId, 'Succeeded'] as [string, string, TaskStatus])))
        .finishedStages,
    ).toEqual([0]);
  });

  it('finishes skipped steps at once, counting a warning only for the one with no matching machine', () => {
    const p = plan({
      steps: [
        step('off', { disabled: true }),
        step('nomatch', { machineIdFilter: ['nobody'] }),
        step('out', { environmentIds: ['env-dev'] }),
        step('run'),
      ],
      machines: [machine('a')],
    });
    const first = nextActions(p, new Map());
    expect(first.start).toEqual([{ stageIndex: 3, stepId: 'run', machineId: 'a' }]);
    expect(first.finishedStages).toEqual([0, 1, 2]);
    const sim = simulate(p);
    expect(sim.finishedStages).toEqual([0, 1, 2, 3]);
    expect(sim.outcome).toEqual({
      status: 'Completed',
      errorCount: 0,
      warningCount: 1,
      errors: [],
      warnings: [{ stepId: 'nomatch', machineId: null, kind: 'NoMatchingMachine' }],
    });
  });

  it('completes at once when every step is skipped', () => {
    const p = plan({ steps: [step('s1', { disabled: true })], machines: five });
    expect(nextActions(p, new Map()).deploymentOutcome).toMatchObject({
      status: 'Completed',
      errorCount: 0,
      warningCount: 0,
    });
  });

  it('completes an empty plan at once', () => {
    expect(nextActions(plan({}), new Map())).toEqual({
      start: [],
      skip: [],
      finishedStages: [],
      deploymentOutcome: { status: 'Completed', errorCount: 0, warningCount: 0, errors: [], warnings: [] },
    });
  });
});

describe('nextActions: errorAction', () => {
  const failOnB = (_: string, m: string): Verdict => (m === 'b' ? 'Failed' : 'Succeeded');
  const cases: Array<{
    errorAction: ErrorAction;
    status: string;
    errors: number;
    warnings: number;
    laterRuns: boolean;
  }> = [
    { errorAction: 'Stop', status: 'Failed', errors: 1, warnings: 0, laterRuns: false },
    { errorAction: 'ContinueOnError', status: 'Completed', errors: 1, warnings: 0, laterRuns: true },
    { errorAction: 'Continue', status: 'Completed', errors: 0, warnings: 1, laterRuns: true },
  ];
  it.each(cases)(
    'ends $status with $errors error(s) and $warnings warning(s) when a $errorAction step fails',
    ({ errorAction, status, errors, warnings, laterRuns }) => {
      const p = plan({
        steps: [step('s1', { errorAction }), step('s2')],
        machines: [machine('a'), machine('b'), machine('c')],
      });
      const sim = simulate(p, (s, m) => (s === 's1' ? failOnB(s, m) : 'Succeeded'));
      expect(sim.outcome).toMatchObject({ status, errorCount: errors, warningCount: warnings });
      expect([...sim.outcome.errors, ...sim.outcome.warnings]).toEqual([
        { stepId: 's1', machineId: 'b', kind: 'TargetFailed' },
      ]);
      // The failing step's other machines still run: a plain step runs on all its machines at once.
      expect(sim.starts.filter((s) => s.startsWith('s1@'))).toEqual(['s1@a', 's1@b', 's1@c']);
      expect(sim.starts.some((s) => s.startsWith('s2@'))).toBe(laterRuns);
      if (!laterRuns) {
        expect(sim.skips).toEqual(['s2@a', 's2@b', 's2@c']);
        expect(sim.events.filter((e) => e.kind === 'skip').every((e) => e.reason === 'DeploymentFailed')).toBe(true);
        expect(sim.finishedStages).toEqual([0]);
      }
    },
  );

  it('lets the targets still pending in the failing Stop step run after the failure', () => {
    const p = plan({
      steps: [step('s1', { parallelMachines: 1 }), step('s2')],
      machines: [machine('a'), machine('b')],
    });
    const a = nextActions(p, state([['s1', 'a', 'Failed']]));
    expect(a.start).toEqual([{ stageIndex: 0, stepId: 's1', machineId: 'b' }]);
    expect(a.skip).toEqual([]);
    expect(a.deploymentOutcome).toBeUndefined();
  });

  it('skips every later stage, rolling groups included, and fails once the Stop step is done', () => {
    const p = plan({
      steps: [step('s1'), step('g1', { rollingGroupId: 'g' }), step('s3')],
      rollingGroups: [group('g')],
      machines: [machine('a')],
    });
    const a = nextActions(p, state([['s1', 'a', 'Failed']]));
    expect(a.skip.map((s) => [s.stageIndex, s.stepId, s.machineId, s.reason])).toEqual([
      [1, 'g1', 'a', 'DeploymentFailed'],
      [2, 's3', 'a', 'DeploymentFailed'],
    ]);
    expect(a.start).toEqual([]);
    expect(a.deploymentOutcome?.status).toBe('Failed');
    expect(a.finishedStages).toEqual([0]);
  });

  it('counts every failed target, and a failure of a later ContinueOnError step as an error too', () => {
    const p = plan({
      steps: [step('s1', { errorAction: 'Continue' }), step('s2', { errorAction: 'ContinueOnError' })],
      machines: [machine('a'), machine('b')],
    });
    const sim = simulate(p, () => 'Failed');
    expect(sim.outcome).toMatchObject({ status: 'Completed', errorCount: 2, warningCount: 2 });
  });

  it('treats a cancelled target as a failure', () => {
    const p = plan({ steps: [step('s1'), step('s2')], machines: [machine('a')] });
    const a = nextActions(p, state([['s1', 'a', 'Cancelled']]));
    expect(a.skip.map((s) => s.stepId)).toEqual(['s2']);
    expect(a.deploymentOutcome?.status).toBe('Failed');
  });
});

describe('nextActions: offline machines', () => {
  it('starts an offline machine like any other so the orchestrator fails it at once, and the others carry on', () => {
    const p = plan({
      steps: [step('s1', { errorAction: 'ContinueOnError' }), step('s2', { machineIdFilter: ['b'] })],
      machines: [machine('a', [], { online: false }), machine('b')],
    });
    expect(nextActions(p, new Map()).start.map((s) => s.machineId)).toEqual(['a', 'b']);
    const sim = simulate(p, (_, m) => (m === 'a' ? 'Failed' : 'Succeeded'));
    expect(statusOf(sim, 's1', 'a')).toBe('Failed');
    expect(statusOf(sim, 's2', 'b')).toBe('Succeeded');
    expect(sim.outcome).toMatchObject({
      status: 'Completed',
      errorCount: 1,
      errors: [{ stepId: 's1', machineId: 'a', kind: 'TargetFailed' }],
    });
  });

  it('fails the deployment when the offline machine belongs to a Stop step', () => {
    const p = plan({ steps: [step('s1'), step('s2')], machines: [machine('a', [], { online: false }), machine('b')] });
    const sim = simulate(p, (_, m) => (m === 'a' ? 'Failed' : 'Succeeded'));
    expect(sim.outcome.status).toBe('Failed');
    expect(sim.skips).toEqual(['s2@a', 's2@b']);
  });
});

describe('isFinished', () => {
  const p = plan({ steps: [step('s1'), step('s2')], machines: [machine('a'), machine('b')] });
  const cases: Array<{ when: string; entries: Array<[string, string, TaskStatus]>; finished: boolean }> = [
    { when: 'nothing ran yet', entries: [], finished: false },
    {
      when: 'a target is running',
      entries: [
        ['s1', 'a', 'Running'],
        ['s1', 'b', 'Succeeded'],
      ],
      finished: false,
    },
    {
      when: 'the next stage can start',
      entries: [
        ['s1', 'a', 'Succeeded'],
        ['s1', 'b', 'Succeeded'],
      ],
      finished: false,
    },
    {
      when: 'a Stop step failed and its stage is done',
      entries: [
        ['s1', 'a', 'Failed'],
        ['s1', 'b', 'Succeeded'],
      ],
      finished: true,
    },
    {
      when: 'a Stop step failed but another target still runs',
      entries: [
        ['s1', 'a', 'Failed'],
        ['s1', 'b', 'Running'],
      ],
      finished: false,
    },
    {
      when: 'every target is done',
      entries: [
        ['s1', 'a', 'Succeeded'],
        ['s1', 'b', 'Succeeded'],
        ['s2', 'a', 'Succeeded'],
        ['s2', 'b', 'Skipped'],
      ],
      finished: true,
    },
    {
      when: 'the orchestrator cancelled everything',
      entries: [
        ['s1', 'a', 'Cancelled'],
        ['s1', 'b', 'Cancelled'],
        ['s2', 'a', 'Cancelled'],
        ['s2', 'b', 'Cancelled'],
      ],
      finished: true,
    },
  ];
  it.each(cases)('is $finished when $when', ({ entries, finished }) => {
    expect(isFinished(p, state(entries))).toBe(finished);
  });

  it('does not change the state it is given', () => {
    const s = state([['s1', 'a', 'Succeeded']]);
    nextActions(p, s);
    expect([...s.entries()]).toEqual([[targetKey('s1', 'a'), 'Succeeded']]);
  });
});
