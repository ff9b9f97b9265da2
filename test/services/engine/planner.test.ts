import { describe, expect, it } from 'vitest';
import { planDeployment, planTargets, targetCount } from '../../../services/engine/planner.ts';
import type { PlanStepInput, RollingStage, Stage, StepStage } from '../../../services/engine/plan-types.ts';
import { group, input, machine, plan, step } from './plan-fixtures.ts';

// web1: linux+eu, Web2: linux+us, db1: windows+eu, api: no tags, off1: offline linux, gone: disabled.
const fleet = [
  machine('web1', ['linux', 'eu']),
  machine('Web2', ['linux', 'us']),
  machine('db1', ['windows', 'eu']),
  machine('api'),
  machine('off1', ['linux'], { online: false }),
  machine('gone', ['linux', 'eu'], { enabled: false }),
];

function only<T extends Stage['kind']>(stages: Stage[], kind: T): Extract<Stage, { kind: T }> {
  expect(stages).toHaveLength(1);
  const stage = stages[0];
  expect(stage?.kind).toBe(kind);
  return stage as Extract<Stage, { kind: T }>;
}

const targetsOf = (s: StepStage): string[] => s.targets.map((t) => t.machineId);

describe('planDeployment: machine selection for a plain step', () => {
  const cases: Array<{
    when: string;
    step?: Partial<PlanStepInput>;
    request?: Parameters<typeof input>[0]['request'];
    expected: string[];
  }> = [
    { when: 'the step has no filters', expected: ['api', 'db1', 'off1', 'web1', 'web2'] },
    {
      when: 'the step lists environments including the target',
      step: { environmentIds: ['env-dev', 'env-prod'] },
      expected: ['api', 'db1', 'off1', 'web1', 'web2'],
    },
    {
      when: 'the step has a machine ID filter',
      step: { machineIdFilter: ['web2', 'db1', 'nope'] },
      expected: ['db1', 'web2'],
    },
    {
      when: 'a tag set has one tag',
      step: { machineTagFilter: [{ tagIds: ['linux'] }] },
      expected: ['off1', 'web1', 'web2'],
    },
    {
      when: 'a tag set needs every one of its tags (AND)',
      step: { machineTagFilter: [{ tagIds: ['linux', 'eu'] }] },
      expected: ['web1'],
    },
    {
      when: 'any of several tag sets matches (OR)',
      step: { machineTagFilter: [{ tagIds: ['linux', 'eu'] }, { tagIds: ['windows'] }] },
      expected: ['db1', 'web1'],
    },
    {
      when: 'a tag set is empty (it matches every machine)',
      step: { machineTagFilter: [{ tagIds: [] }] },
      expected: ['api', 'db1', 'off1', 'web1', 'web2'],
    },
    {
      when: 'machine and tag filters both narrow',
      step: { machineIdFilter: ['web1', 'web2', 'db1'], machineTagFilter: [{ tagIds: ['eu'] }] },
      expected: ['db1', 'web1'],
    },
    {
      when: 'the request includes machines',
      request: { machineMode: 'Include', machineIds: ['web1', 'api', 'unknown'] },
      expected: ['api', 'web1'],
    },
    {
      when: 'the request excludes machines',
      request: { machineMode: 'Exclude', machineIds: ['web1', 'api'] },
      expected: ['db1', 'off1', 'web2'],
    },
    {
      when: 'the request mode is All (machineIds ignored)',
      request: { machineMode: 'All', machineIds: ['web1'] },
      expected: ['api', 'db1', 'off1', 'web1', 'web2'],
    },
    {
      when: 'the request include and the step filters intersect',
      step: { machineTagFilter: [{ tagIds: ['linux'] }] },
      request: { machineMode: 'Include', machineIds: ['web1', 'db1'] },
      expected: ['web1'],
    },
    {
      when: 'the request includes a disabled machine (never a target)',
      request: { machineMode: 'Include', machineIds: ['gone', 'api'] },
      expected: ['api'],
    },
  ];
  it.each(cases)('targets $expected when $when', ({ step: overrides, request, expected }) => {
    const stage = only(plan({ steps: [step('s1', overrides)], machines: fleet, request }).stages, 'Step');
    expect(stage.skip).toBeNull();
    expect(targetsOf(stage)).toEqual(expected);
  });

  it('keeps an offline machine in the plan, marked offline', () => {
    const stage = only(plan({ steps: [step('s1')], machines: fleet }).stages, 'Step');
    expect(stage.targets.find((t) => t.machineId === 'off1')).toEqual({
      machineId: 'off1',
      machineName: 'off1',
      online: false,
    });
    expect(stage.targets.find((t) => t.machineId === 'web1')?.online).toBe(true);
  });

  it('orders targets by name case-insensitively whatever the input order', () => {
    const machines = [
      machine('beta'),
      machine('Gamma'),
      machine('alpha2'),
      machine('Alpha'),
      machine('ALPHA', [], { machineId: 'm-upper' }),
    ];
    const stage = only(plan({ steps: [step('s1')], machines }).stages, 'Step');
    expect(stage.targets.map((t) => t.machineName)).toEqual(['ALPHA', 'Alpha', 'alpha2', 'beta', 'Gamma']);
    const reversed = only(plan({ steps: [step('s1')], machines: [...machines].reverse() }).stages, 'Step');
    expect(reversed).toEqual(stage);
  });
});

describe('planDeployment: skipped steps', () => {
  const cases: Array<{
    when: string;
    step: Partial<PlanStepInput>;
    exclude?: string[];
    reason: string;
    level: string;
  }> = [
    { when: 'the step is disabled', step: { disabled: true }, reason: 'Disabled', level: 'Information' },
    {
      when: 'the request excludes its name',
      step: { name: 'Deploy Web' },
      exclude: ['Other', 'Deploy Web'],
      reason: 'Excluded',
      level: 'Information',
    },
    {
      when: 'the request excludes its name in another case',
      step: { name: 'Deploy Web' },
      exclude: ['deploy WEB'],
      reason: 'Excluded',
      level: 'Information',
    },
    {
      when: 'the step is disabled and excluded (disabled wins)',
      step: { name: 'x', disabled: true },
      exclude: ['x'],
      reason: 'Disabled',
      level: 'Information',
    },
    {
      when: 'the step is scoped to other environments',
      step: { environmentIds: ['env-dev'] },
      reason: 'EnvironmentNotInScope',
      level: 'Information',
    },
    {
      when: 'no machine carries the filter tags',
      step: { machineTagFilter: [{ tagIds: ['linux', 'windows'] }] },
      reason: 'NoMatchingMachine',
      level: 'Warning',
    },
    {
      when: 'the machine filter names only a disabled machine',
      step: { machineIdFilter: ['gone'] },
      reason: 'NoMatchingMachine',
      level: 'Warning',
    },
  ];
  it.each(cases)('skips with $reason ($level) when $when', ({ step: overrides, exclude, reason, level }) => {
    const stage = only(
      plan({ steps: [step('s1', overrides)], machines: fleet, request: { excludeStepNames: exclude ?? [] } }).stages,
      'Step',
    );
    expect(stage.targets).toEqual([]);
    expect(stage.skip).toMatchObject({ reason, level });
    expect(stage.skip?.message).toContain(stage.name);
  });

  it('skips with a warning when the environment has no machines at all', () => {
    const stage = only(plan({ steps: [step('s1')], machines: [] }).stages, 'Step');
    expect(stage.skip?.reason).toBe('NoMatchingMachine');
  });

  it('keeps a step whose name is not excluded', () => {
    const stage = only(
      plan({ steps: [step('s1', { name: 'Deploy' })], machines: fleet, request: { excludeStepNames: ['Deploy2'] } })
        .stages,
      'Step',
    );
    expect(stage.skip).toBeNull();
  });
});

describe('planDeployment: parallelism', () => {
  const cases = [
    { parallelMachines: null, max: 8, expected: 8 },
    { parallelMachines: 3, max: 8, expected: 3 },
    { parallelMachines: 8, max: 8, expected: 8 },
    { parallelMachines: 20, max: 8, expected: 8 },
    { parallelMachines: null, max: 4, expected: 4 },
    { parallelMachines: 1, max: 4, expected: 1 },
    { parallelMachines: 0, max: 8, expected: 1 },
  ];
  it.each(cases)(
    'is $expected when parallelMachines is $parallelMachines and the maximum $max',
    ({ parallelMachines, max, expected }) => {
      const stage = only(
        plan({ steps: [step('s1', { parallelMachines })], machines: fleet, organization: { maxParallelMachines: max } })
          .stages,
        'Step',
      );
      expect(stage.parallelism).toBe(expected);
    },
  );
});

describe('planDeployment: stages', () => {
  it('places a rolling group where its first member is, between plain steps', () => {
    const p = plan({
      steps: [step('a'), step('b', { rollingGroupId: 'g' }), step('c', { rollingGroupId: 'g' }), step('d')],
      rollingGroups: [group('g')],
      machines: fleet,
    });
    expect(p.environmentId).toBe('env-prod');
    expect(p.stages.map((s) => (s.kind === 'Step' ? s.stepId : `group:${s.rollingGroupId}`))).toEqual([
      'a',
      'group:g',
      'd',
    ]);
    const g = p.stages[1] as RollingStage;
    expect(g.members.map((m) => m.stepId)).toEqual(['b', 'c']);
  });

  it('carries errorAction into the stage', () => {
    const p = plan({ steps: [step('a', { errorAction: 'ContinueOnError' })], machines: fleet });
    expect((p.stages[0] as StepStage).errorAction).toBe('ContinueOnError');
  });

  it('refuses a step that refers to a rolling group missing from the input', () => {
    expect(() => planDeployment(input({ steps: [step('a', { rollingGroupId: 'ghost' })], machines: fleet }))).toThrow(
      /ghost/,
    );
  });

  it('lists every (step, machine) target in stage order', () => {
    const p = plan({
      steps: [
        step('a', { machineIdFilter: ['web1', 'api'] }),
        step('b', { rollingGroupId: 'g' }),
        step('c', { rollingGroupId: 'g', machineIdFilter: ['db1'] }),
      ],
      rollingGroups: [group('g')],
      machines: [machine('web1'), machine('db1'), machine('api')],
    });
    expect(planTargets(p).map((t) => `${t.stageIndex}:${t.stepId}@${t.machineId}`)).toEqual([
      '0:a@api',
      '0:a@web1',
      '1:b@api',
      '1:b@db1',
      '1:b@web1',
      '1:c@db1',
    ]);
    expect(targetCount(p)).toBe(6);
  });
});

describe('planDeployment: rolling groups', () => {
  const grouped = (ids: string[], overrides: Record<string, Partial<PlanStepInput>> = {}): PlanStepInput[] =>
    ids.map((id) => step(id, { rollingGroupId: 'g', ...overrides[id] }));
  const rolling = (parts: Parameters<typeof plan>[0]): RollingStage => only(plan(parts).stages, 'RollingGroup');
  const order = (g: RollingStage): string[] => g.machines.map((m) => `${m.rank}:${m.machineName}`);

  it('orders machines by name case-insensitively in one rank for MachineName', () => {
    const g = rolling({
      steps: grouped(['s1']),
      rollingGroups: [group('g')],
      machines: [machine('b2'), machine('A1'), machine('a3'), machine('B1')],
    });
    expect(order(g)).toEqual(['0:A1', '0:a3', '0:B1', '0:b2']);
  });

  it('ignores machineOrderTagIds for MachineName', () => {
    const g = rolling({
      steps: grouped(['s1']),
      rollingGroups: [group('g', { machineOrderTagIds: ['t2'] })],
      machines: [machine('b', ['t2']), machine('a')],
    });
    expect(order(g)).toEqual(['0:a', '0:b']);
  });

  it('ranks by the first listed tag a machine carries for TagPriority, untagged machines last', () => {
    const machines = [
      machine('zeta', ['t1']),
      machine('Alpha', ['t2']),
      machine('beta', ['t2', 't1']),
      machine('aardvark'),
      machine('gamma', ['t3', 'other']),
      machine('Delta', ['other']),
      machine('eta', ['t1']),
    ];
    const g = rolling({
      steps: grouped(['s1']),
      rollingGroups: [group('g', { machineOrder: 'TagPriority', machineOrderTagIds: ['t1', 't2', 't3'] })],
      machines,
    });
    expect(order(g)).toEqual(['0:beta', '0:eta', '0:zeta', '1:Alpha', '2:gamma', '3:aardvark', '3:Delta']);
  });

  it('lists per machine only the members that apply to it, and which are skipped there', () => {
    const g = rolling({
      steps: grouped(['s1', 's2', 's3'], {
        s2: { machineTagFilter: [{ tagIds: ['linux'] }] },
        s3: { machineIdFilter: ['db1'] },
      }),
      rollingGroups: [group('g')],
      machines: [machine('web1', ['linux']), machine('db1', ['windows'])],
    });
    expect(g.machines.map((m) => ({ id: m.machineId, run: m.stepIds, skip: m.notApplicableStepIds }))).toEqual([
      { id: 'db1', run: ['s1', 's3'], skip: ['s2'] },
      { id: 'web1', run: ['s1', 's2'], skip: ['s3'] },
    ]);
  });

  it('leaves out machines that no member applies to, and disabled machines', () => {
    const g = rolling({
      steps: grouped(['s1', 's2'], { s1: { machineIdFilter: ['a'] }, s2: { machineIdFilter: ['a', 'c'] } }),
      rollingGroups: [group('g')],
      machines: [machine('a'), machine('b'), machine('c', [], { enabled: false })],
    });
    expect(g.machines.map((m) => m.machineId)).toEqual(['a']);
  });

  it('keeps an offline machine in the group, marked offline', () => {
    const g = rolling({
      steps: grouped(['s1']),
      rollingGroups: [group('g')],
      machines: [machine('a', [], { online: false }), machine('b')],
    });
    expect(g.machines.map((m) => [m.machineId, m.online])).toEqual([
      ['a', false],
      ['b', true],
    ]);
  });

  it('marks disabled, excluded and out-of-scope members skipped and runs the others', () => {
    const g = rolling({
      steps: grouped(['s1', 's2', 's3', 's4'], {
        s1: { disabled: true },
        s2: { name: 'Two' },
        s4: { environmentIds: ['env-dev'] },
      }),
      rollingGroups: [group('g')],
      machines: [machine('a')],
      request: { excludeStepNames: ['two'] },
    });
    expect(g.members.map((m) => [m.stepId, m.skip?.reason ?? null])).toEqual([
      ['s1', 'Disabled'],
      ['s2', 'Excluded'],
      ['s3', null],
      ['s4', 'EnvironmentNotInScope'],
    ]);
    expect(g.machines[0]?.stepIds).toEqual(['s3']);
    expect(g.machines[0]?.notApplicableStepIds).toEqual([]);
    expect(g.noTargets).toBeNull();
  });

  it.each(['Skip', 'Warn', 'Fail'] as const)(
    'sets noTargets to %s when no machine matches any member',
    (onNoTargets) => {
      const g = rolling({
        steps: grouped(['s1', 's2'], {
          s1: { machineTagFilter: [{ tagIds: ['nope'] }] },
          s2: { machineIdFilter: ['nobody'] },
        }),
        rollingGroups: [group('g', { onNoTargets })],
        machines: [machine('a')],
      });
      expect(g.machines).toEqual([]);
      expect(g.noTargets).toBe(onNoTargets);
    },
  );

  it('does not apply onNoTargets when every member is skipped anyway', () => {
    const g = rolling({
      steps: grouped(['s1'], { s1: { disabled: true } }),
      rollingGroups: [group('g', { onNoTargets: 'Fail' })],
      machines: [],
    });
    expect(g.noTargets).toBeNull();
    expect(g.machines).toEqual([]);
  });

  it('applies the request machineMode to group machines', () => {
    const g = rolling({
      steps: grouped(['s1']),
      rollingGroups: [group('g')],
      machines: [machine('a'), machine('b'), machine('c')],
      request: { machineMode: 'Exclude', machineIds: ['b'] },
    });
    expect(g.machines.map((m) => m.machineId)).toEqual(['a', 'c']);
  });

  const settings = [
    {
      when: 'within the maximum',
      windowSize: 3,
      max: 8,
      wait: true,
      machineOrder: 'TagPriority' as const,
      expected: { windowSize: 3, waitBetweenMachineGroups: true },
    },
    {
      when: 'above a lowered maximum',
      windowSize: 10,
      max: 4,
      wait: false,
      machineOrder: 'MachineName' as const,
      expected: { windowSize: 4, waitBetweenMachineGroups: false },
    },
    {
      when: 'zero',
      windowSize: 0,
      max: 8,
      wait: false,
      machineOrder: 'MachineName' as const,
      expected: { windowSize: 1, waitBetweenMachineGroups: false },
    },
    {
      when: 'waiting is asked without TagPriority',
      windowSize: 2,
      max: 8,
      wait: true,
      machineOrder: 'MachineName' as const,
      expected: { windowSize: 2, waitBetweenMachineGroups: false },
    },
  ];
  it.each(settings)(
    'clamps the window and wait flag when $when',
    ({ windowSize, max, wait, machineOrder, expected }) => {
      const g = rolling({
        steps: grouped(['s1']),
        rollingGroups: [
          group('g', {
            windowSize,
            waitBetweenMachineGroups: wait,
            machineOrder,
            onMachineFailure: 'ContinueToOtherMachines',
            onMemberFailure: 'ContinueMembers',
          }),
        ],
        machines: [machine('a')],
        organization: { maxParallelMachines: max },
      });
      expect(g).toMatchObject({
        ...expected,
        onMachineFailure: 'ContinueToOtherMachines',
        onMemberFailure: 'ContinueMembers',
        name: 'g',
        rollingGroupId: 'g',
      });
    },
  );
});
