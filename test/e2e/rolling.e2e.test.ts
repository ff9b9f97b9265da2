/**
 * End to end: rolling groups (spec §2.5) on four real agents running real bash. Order and window
 * are read from the timestamps the agents' scripts echo themselves, not from the control plane.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  targetStatuses,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
  type E2eStep,
} from './harness.ts';
import { E2E_MODES } from './modes.ts';

/** Created out of order; case-insensitive name order is M-a, m-b, M-c, m-d (plain code-point order would differ). */
const MACHINES = ['m-d', 'M-c', 'm-b', 'M-a'];
const BY_NAME = ['M-a', 'm-b', 'M-c', 'm-d'];

const timed = (name: string): E2eStep => ({
  name,
  script:
    'echo "start $(date +%s%N) #{CONTEXT.MachineName} #{CONTEXT.StepName}"\nsleep 0.3\necho "end $(date +%s%N) #{CONTEXT.MachineName} #{CONTEXT.StepName}"',
});

interface Run {
  machine: string;
  step: string;
  start: bigint;
  end: bigint;
}

/** Every member run as the agents timed it, from the echoed `start`/`end` lines. */
function runsFrom(lines: string[]): Run[] {
  const runs = new Map<string, Partial<Run>>();
  for (const line of lines) {
    const match = /^(start|end) (\d+) (\S+) (\S+)$/.exec(line);
    if (!match) continue;
    const [, kind, nanos, machine, step] = match as unknown as [string, 'start' | 'end', string, string, string];
    const run = runs.get(`${machine}/${step}`) ?? { machine, step };
    run[kind] = BigInt(nanos);
    runs.set(`${machine}/${step}`, run);
  }
  return [...runs.values()].map((r) => {
    if (r.start === undefined || r.end === undefined) throw new Error(`incomplete run ${r.machine}/${r.step}`);
    return r as Run;
  });
}

interface Span {
  machine: string;
  start: bigint;
  end: bigint;
}

/** When each machine was inside the group: from its first member's start to its last member's end. */
function spans(runs: Run[]): Span[] {
  const byMachine = new Map<string, Span>();
  for (const r of runs) {
    const span = byMachine.get(r.machine);
    if (!span) byMachine.set(r.machine, { machine: r.machine, start: r.start, end: r.end });
    else
      byMachine.set(r.machine, {
        machine: r.machine,
        start: r.start < span.start ? r.start : span.start,
        end: r.end > span.end ? r.end : span.end,
      });
  }
  return [...byMachine.values()].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
}

/** The most machines inside the group at one instant (an end at the same instant as a start does not overlap). */
function maxConcurrent(list: Span[]): number {
  const events = list.flatMap((s) => [
    { at: s.start, delta: 1 },
    { at: s.end, delta: -1 },
  ]);
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.delta - b.delta));
  let current = 0;
  let max = 0;
  for (const e of events) {
    current += e.delta;
    max = Math.max(max, current);
  }
  return max;
}

describe.each(E2E_MODES)('rolling groups end to end on $name (four agents)', (mode) => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  const tags: Record<string, string> = {};
  let machines: Record<string, string> = {};

  beforeAll(async () => {
    plane = await startControlPlane(await mode.options());
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    for (const name of ['tag-a', 'tag-b', 'tag-nobody']) {
      const created = await client.post('/api/tag', { workspaceId, name });
      expect(created.status, created.text).toBe(200);
      tags[name] = created.body.tagId;
    }
    machines = await startMachines(
      plane,
      client,
      workspaceId,
      MACHINES.map((name) => ({ name, environmentIds: [workspace.environments.Staging!] })),
    );
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  /** A project whose steps all belong to one rolling group with these settings. */
  async function rollingProject(steps: E2eStep[], settings: Record<string, unknown>, after: E2eStep[] = []) {
    const project = await bashProject(client, workspaceId, lifecycleId, [...steps, ...after]);
    const group = await client.post('/api/project/rolling-group', {
      projectId: project.projectId,
      name: 'Roll',
      memberStepIds: steps.map((s) => project.stepIds[s.name]),
      ...settings,
    });
    expect(group.status, group.text).toBe(200);
    return project.projectId;
  }

  async function deployToStaging(projectId: string) {
    const [id] = await releaseAndDeploy(client, projectId, ['Staging']);
    const status = await waitForDeployment(client, id!, 30_000).catch(async (error: unknown) => {
      // The deployment's own log says where it stopped.
      const lines = (await logsOf(client, id!)).map((l) => `${l.LogLevel} ${l.Data}`);
      throw new Error(`${String(error)}\n${lines.join('\n')}`);
    });
    return { id: id!, status };
  }

  it('runs one machine at a time in case-insensitive name order with windowSize 1, each machine finishing both members first', async () => {
    const projectId = await rollingProject([timed('First'), timed('Second')], {
      windowSize: 1,
      machineOrder: 'MachineName',
    });
    const { id, status } = await deployToStaging(projectId);
    expect(status.Status).toBe('Completed');

    const runs = runsFrom((await logsOf(client, id)).map((l) => l.Data));
    expect(runs).toHaveLength(8);
    const order = spans(runs);
    expect(order.map((s) => s.machine)).toEqual(BY_NAME);
    // Each machine ran First then Second, and ended before the next machine began anything.
    for (const machine of BY_NAME) {
      const first = runs.find((r) => r.machine === machine && r.step === 'First')!;
      const second = runs.find((r) => r.machine === machine && r.step === 'Second')!;
      expect(first.end <= second.start, `${machine}: First before Second`).toBe(true);
    }
    for (let i = 1; i < order.length; i++) {
      expect(
        order[i - 1]!.end <= order[i]!.start,
        `${order[i - 1]!.machine} ends before ${order[i]!.machine} starts`,
      ).toBe(true);
    }
    expect(maxConcurrent(order)).toBe(1);
  }, 60_000);

  it('keeps at most two machines inside the group with windowSize 2, and reaches two', async () => {
    const projectId = await rollingProject([timed('First'), timed('Second')], {
      windowSize: 2,
      machineOrder: 'MachineName',
    });
    const { id, status } = await deployToStaging(projectId);
    expect(status.Status).toBe('Completed');

    const runs = runsFrom((await logsOf(client, id)).map((l) => l.Data));
    expect(runs).toHaveLength(8);
    const order = spans(runs);
    expect(maxConcurrent(order)).toBe(2);
    // The first two by name start first; the other two only once a window place is free.
    expect(
      order
        .slice(0, 2)
        .map((s) => s.machine)
        .sort(),
    ).toEqual(['M-a', 'm-b'].sort());
    for (const machine of BY_NAME) {
      const first = runs.find((r) => r.machine === machine && r.step === 'First')!;
      const second = runs.find((r) => r.machine === machine && r.step === 'Second')!;
      expect(first.end <= second.start, `${machine}: First before Second`).toBe(true);
    }
  }, 60_000);

  it('finishes every machine of a tag rank before the next rank starts, untagged machines last', async () => {
    // rank 0 (tag-a): M-c, m-d; rank 1 (tag-b): m-b; no listed tag: M-a.
    const tagged: Record<string, string[]> = {
      'M-c': [tags['tag-a']!],
      'm-d': [tags['tag-a']!],
      'm-b': [tags['tag-b']!],
      'M-a': [],
    };
    for (const [name, tagIds] of Object.entries(tagged)) {
      const updated = await client.put('/api/machine', { machineId: machines[name], tagIds });
      expect(updated.status, updated.text).toBe(200);
    }
    try {
      // m-d takes a second longer than M-c: without waiting for the whole rank, m-b would start as soon as M-c is done.
      const slowOnD = {
        ...timed('First'),
        script: `${timed('First').script}\nif [ "#{CONTEXT.MachineName}" = "m-d" ]; then sleep 1; fi`,
      };
      const projectId = await rollingProject([slowOnD, timed('Second')], {
        windowSize: 2,
        machineOrder: 'TagPriority',
        machineOrderTagIds: [tags['tag-a'], tags['tag-b']],
        waitBetweenMachineGroups: true,
      });
      const { id, status } = await deployToStaging(projectId);
      expect(status.Status).toBe('Completed');

      const order = spans(runsFrom((await logsOf(client, id)).map((l) => l.Data)));
      expect(order).toHaveLength(4);
      const of = (name: string) => order.find((s) => s.machine === name)!;
      const rank0 = [of('M-c'), of('m-d')];
      const latest = (list: Span[]) => list.reduce((max, s) => (s.end > max ? s.end : max), 0n);
      expect(latest(rank0) <= of('m-b').start, 'rank 0 done before rank 1 starts').toBe(true);
      expect(of('m-b').end <= of('M-a').start, 'rank 1 done before the untagged machine starts').toBe(true);
      // The window still applies within a rank: both rank-0 machines were in at once.
      expect(maxConcurrent(rank0)).toBe(2);
    } finally {
      for (const name of Object.keys(tagged))
        await client.put('/api/machine', { machineId: machines[name], tagIds: [] });
    }
  }, 60_000);

  const failOnB = (name: string): E2eStep => ({
    name,
    script:
      'echo "#{CONTEXT.StepName} on #{CONTEXT.MachineName}"\nif [ "#{CONTEXT.MachineName}" = "m-b" ]; then exit 3; fi',
  });
  const ok = (name: string): E2eStep => ({ name, script: 'echo "#{CONTEXT.StepName} on #{CONTEXT.MachineName}"' });

  it('applies onMachineFailure and onMemberFailure', async () => {
    const run = async (settings: Record<string, unknown>) => {
      const projectId = await rollingProject([failOnB('Fragile'), ok('Next')], {
        windowSize: 1,
        machineOrder: 'MachineName',
        ...settings,
      });
      const { id, status } = await deployToStaging(projectId);
      return {
        status,
        targets: await targetStatuses(client, id),
        lines: (await logsOf(client, id)).map((l) => l.Data),
      };
    };
    const [stop, carryOn, continueMembers] = await Promise.all([
      run({ onMachineFailure: 'StopStep', onMemberFailure: 'SkipRestOnThisMachine' }),
      run({ onMachineFailure: 'ContinueToOtherMachines', onMemberFailure: 'SkipRestOnThisMachine' }),
      run({ onMachineFailure: 'ContinueToOtherMachines', onMemberFailure: 'ContinueMembers' }),
    ]);

    // StopStep: M-a ran, m-b failed and skipped the rest; M-c and m-d never started the group.
    expect(stop.targets).toEqual({
      Fragile: { 'M-a': 'Succeeded', 'm-b': 'Failed', 'M-c': 'Skipped', 'm-d': 'Skipped' },
      Next: { 'M-a': 'Succeeded', 'm-b': 'Skipped', 'M-c': 'Skipped', 'm-d': 'Skipped' },
    });
    expect(stop.lines.filter((l) => / on (M-c|m-d)$/.test(l))).toEqual([]);
    // The member's errorAction (Stop by default) is what fails the deployment.
    expect(stop.status.Status).toBe('Failed');

    // ContinueToOtherMachines: the later machines still run; m-b skips its remaining member.
    expect(carryOn.targets).toEqual({
      Fragile: { 'M-a': 'Succeeded', 'm-b': 'Failed', 'M-c': 'Succeeded', 'm-d': 'Succeeded' },
      Next: { 'M-a': 'Succeeded', 'm-b': 'Skipped', 'M-c': 'Succeeded', 'm-d': 'Succeeded' },
    });
    expect(carryOn.lines).not.toContain('Next on m-b');
    expect(carryOn.lines).toContain('Next on m-d');
    expect(carryOn.status.Status).toBe('Failed');

    // ContinueMembers: m-b runs its remaining member after the failure.
    expect(continueMembers.targets.Next).toEqual({
      'M-a': 'Succeeded',
      'm-b': 'Succeeded',
      'M-c': 'Succeeded',
      'm-d': 'Succeeded',
    });
    expect(continueMembers.lines).toContain('Next on m-b');
    expect(continueMembers.targets.Fragile!['m-b']).toBe('Failed');
  }, 60_000);

  it('applies onNoTargets Skip, Warn and Fail when no machine matches any member', async () => {
    const nobody = { machineTagFilter: [{ tagIds: [tags['tag-nobody']] }] };
    const run = async (onNoTargets: string) => {
      const projectId = await rollingProject(
        [{ ...ok('Lonely'), settings: nobody }],
        { windowSize: 1, machineOrder: 'MachineName', onNoTargets },
        [ok('Afterwards')],
      );
      const { id, status } = await deployToStaging(projectId);
      return { status, targets: await targetStatuses(client, id), logs: await logsOf(client, id) };
    };
    const [skip, warn, fail] = await Promise.all([run('Skip'), run('Warn'), run('Fail')]);

    expect(skip.status).toMatchObject({ Status: 'Completed', ErrorCount: 0, WarningCount: 0 });
    expect(skip.targets.Lonely).toEqual({});
    expect(
      skip.logs.some(
        (l) => l.LogLevel === 'Information' && l.Data.includes("'Lonely'") && l.Data.includes('is skipped'),
      ),
    ).toBe(true);
    expect(skip.logs.filter((l) => l.Data === 'Afterwards on M-a')).toHaveLength(1);

    expect(warn.status.Status).toBe('Completed');
    expect(warn.status.ErrorCount).toBe(0);
    expect(warn.status.WarningCount).toBeGreaterThan(0);
    expect(warn.logs.some((l) => l.LogLevel === 'Warning' && l.Data.includes('no machine matches'))).toBe(true);
    expect(warn.targets.Afterwards).toEqual({
      'M-a': 'Succeeded',
      'm-b': 'Succeeded',
      'M-c': 'Succeeded',
      'm-d': 'Succeeded',
    });

    expect(fail.status.Status).toBe('Failed');
    expect(fail.status.ErrorCount).toBeGreaterThan(0);
    expect(
      fail.logs.some((l) => l.LogLevel === 'Error' && l.Data.includes("'Lonely'") && l.Data.includes('fails')),
    ).toBe(true);
    // The failed group stops the deployment (errorAction Stop): the next step never runs.
    expect(fail.targets.Afterwards).toEqual({ 'M-a': 'Skipped', 'm-b': 'Skipped', 'M-c': 'Skipped', 'm-d': 'Skipped' });
    expect(fail.logs.some((l) => /^Afterwards on \S+$/.test(l.Data))).toBe(false);
  }, 60_000);

  it('applies errorAction Stop, ContinueOnError and Continue to a step that fails on one machine', async () => {
    const run = async (errorAction: string) => {
      const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
        { ...failOnB('Fragile'), settings: { errorAction } },
        ok('Afterwards'),
      ]);
      const { id, status } = await deployToStaging(projectId);
      return { status, targets: await targetStatuses(client, id), logs: await logsOf(client, id) };
    };
    const [stop, continueOnError, carryOn] = await Promise.all([run('Stop'), run('ContinueOnError'), run('Continue')]);
    const allSucceeded = { 'M-a': 'Succeeded', 'm-b': 'Succeeded', 'M-c': 'Succeeded', 'm-d': 'Succeeded' };

    expect(stop.status.Status).toBe('Failed');
    expect(stop.targets.Fragile).toEqual({
      'M-a': 'Succeeded',
      'm-b': 'Failed',
      'M-c': 'Succeeded',
      'm-d': 'Succeeded',
    });
    expect(stop.targets.Afterwards).toEqual({ 'M-a': 'Skipped', 'm-b': 'Skipped', 'M-c': 'Skipped', 'm-d': 'Skipped' });

    expect(continueOnError.status.Status).toBe('Completed');
    expect(continueOnError.status.ErrorCount).toBeGreaterThan(0);
    expect(continueOnError.targets.Afterwards).toEqual(allSucceeded);
    expect(continueOnError.logs.some((l) => l.LogLevel === 'Error' && l.Data.includes('exit code 3'))).toBe(true);

    expect(carryOn.status.Status).toBe('Completed');
    expect(carryOn.status.ErrorCount).toBe(0);
    expect(carryOn.status.WarningCount).toBeGreaterThan(0);
    expect(carryOn.targets.Afterwards).toEqual(allSucceeded);
    expect(carryOn.logs.some((l) => l.LogLevel === 'Warning' && l.Data.includes('exit code 3'))).toBe(true);
  }, 60_000);
});
