/**
 * The engine against the real PostgreSQL and the in-process bus. Agents are simulated at the
 * engine's AgentPort (the gateway's side), so these tests pin the orchestration itself; the e2e
 * suite runs the same flows through gRPC with real agent processes.
 */
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, isFinalStatus } from '../../../services/core/index.ts';
import { EventSubject, InProcessBus, type TasksDispatchedEvent } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import type { RunTaskPayload } from '../../../services/engine/agent-port.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  deployment,
  environmentId,
  fleetOf,
  onlineMachine as onlineMachineFixture,
  release,
  rollingGroup,
  step,
} from '../../helpers/engine-fixtures.ts';

let t: TestContext;
/** The engine's clock: real time plus an offset a test may move forward (reset after each test). */
const clock = {
  offsetMs: 0,
  now: () => new Date(Date.now() + clock.offsetMs),
};
let engine: Engine;
let bus: InProcessBus;
let staging: string;

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  bus = new InProcessBus({ logger, retryBaseMs: 50 });
  engine = createEngine({
    store: t.deps.store,
    clock,
    bus,
    secrets: t.deps.secrets,
    logger,
    sweepIntervalMs: 200,
    timing: { cancelGraceMs: 2_000 },
  });
  await engine.start();
  staging = await environmentId(t, 'Staging');
});

/** What a test started (fleets, machines in environments): undone after it, pass or fail. */
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  clock.offsetMs = 0;
});

/** An online machine in `envId` for this test only (it leaves the environment after the test). */
async function onlineMachine(...args: Parameters<typeof onlineMachineFixture>): Promise<string> {
  const machineId = await onlineMachineFixture(...args);
  cleanups.push(async () => void (await t.db('machine_environments').where({ machine_id: machineId }).delete()));
  return machineId;
}

afterAll(async () => {
  await engine.stop();
  await bus.close();
});

/** A fake fleet: polls the engine for work like connected agents and finishes tasks on demand. */
function fleet(
  machineIds: string[],
  behaviour: (task: RunTaskPayload, machineId: string) => { outcome: 'SUCCEEDED' | 'FAILED'; lines?: string[] } | null,
) {
  const started: Array<{ machineId: string; task: RunTaskPayload; at: number }> = [];
  const seen = new Set<string>();
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      for (const machineId of machineIds) {
        for (const task of (await engine.agentPort.assignmentsFor(machineId)).run) {
          if (seen.has(task.taskId)) continue;
          seen.add(task.taskId);
          started.push({ machineId, task, at: Date.now() });
          const result = behaviour(task, machineId);
          if (!result) continue; // stays running until cancelled
          const lines = result.lines ?? [`hello from ${task.stepName}`];
          await engine.agentPort.recordLogs(machineId, task.taskId, [
            {
              firstSeq: 1,
              lineCount: lines.length,
              firstUnixNanos: `${BigInt(Date.now()) * 1_000_000n}`,
              text: lines.map((line) => `${line}\n`).join(''),
              streams: null,
              timeDeltasNs: null,
            },
          ]);
          await engine.agentPort.recordResult(machineId, task.taskId, {
            outcome: result.outcome,
            exitCode: result.outcome === 'SUCCEEDED' ? 0 : 3,
            message: '',
            lastLogSeq: lines.length,
          });
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const running = loop();
  const stop = async () => {
    stopped = true;
    await running;
  };
  cleanups.push(stop);
  return { started, stop };
}

async function finalStatus(deploymentId: string, timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const d = await t.deps.store.deployments.get(deploymentId);
      return d && isFinalStatus(d.status) ? d : null;
    },
    { timeoutMs, description: `deployment ${deploymentId} to finish` },
  );
}

describe('engine', () => {
  it('runs every step on every machine in step order and completes, with logs', async () => {
    const a = await onlineMachine(t, 'web-a', staging);
    const b = await onlineMachine(t, 'web-b', staging);
    const target = await release(t, { steps: [step('Build'), step('Deploy')] });
    const id = await deployment(t, target, staging);
    const agents = fleet([a, b], () => ({ outcome: 'SUCCEEDED' }));
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Completed');
    expect(agents.started.map((s) => s.task.stepName)).toEqual(['Build', 'Build', 'Deploy', 'Deploy']);
    const tasks = await t.deps.store.deploymentTasks.listForDeployment(id);
    expect(tasks.map((x) => x.status)).toEqual(['Succeeded', 'Succeeded', 'Succeeded', 'Succeeded']);
    const logs = await t.deps.store.deploymentLogs.read(id, null, 1000);
    expect(logs.map((l) => l.data)).toEqual(
      expect.arrayContaining(['hello from Build', 'hello from Deploy', 'The deployment completed successfully']),
    );
    const scriptLine = logs.find((l) => l.data === 'hello from Build')!;
    const parent = logs.find((l) => l.id === scriptLine.parentLogId)!;
    expect(parent.data).toMatch(/^Running 'Build' on web-/);
    expect(logs.find((l) => l.id === parent.parentLogId)!.data).toBe("Step 'Build'");
    const statusChanges = await t
      .db('deployment_logs')
      .where({ deployment_id: id })
      .whereIn('data', ['Validating the deployment', "Deploying release to 'Staging'"])
      .orderBy('tick');
    expect(statusChanges.map((r) => r.data)).toEqual(['Validating the deployment', "Deploying release to 'Staging'"]);
  });

  it("warns of an empty package property, and once per name and step of a system value named without CONTEXT. or by Octopus's name that no variable has", async () => {
    const m = await onlineMachine(t, 'hint-a', staging);
    const script = (text: string) => ({ ...step('x').template, script: text });
    const packageProperty = { Id: 'Pkg', Name: 'Package', DefaultValue: null, ControlType: 'PackageSelector' };
    const target = await release(t, {
      steps: [
        step('Deploy', {
          template: script('cd #{PackageFolder} && ls #{packagefolder} #{CONTEXT.MachineName} #{StepName}'),
        }),
        step('Notes', { template: script('echo ok'), properties: { Text: '#{ReleaseVersion}' } }),
        step('Ported', { template: script('echo "#{Octopus.Release.Number} to #{Octopus.Environment.Name}"') }),
        step('Unpackaged', { template: { ...script('echo ok'), properties: [packageProperty] } }),
        step('Packaged', {
          template: { ...script('echo ok'), properties: [packageProperty] },
          properties: { Pkg: 'Web' },
        }),
        step('Off', { disabled: true, template: script('echo #{MachineName}') }),
      ],
      variables: [{ variableId: 'v1', name: 'StepName', variableType: 'Text', source: 'project', values: [] }],
    });
    const id = await deployment(t, target, staging);
    fleet([m], () => ({ outcome: 'SUCCEEDED' }));
    await engine.wake([id]);
    expect((await finalStatus(id)).status).toBe('Completed');
    const logs = await t.deps.store.deploymentLogs.read(id, null, 1000);
    expect(logs.filter((l) => l.level === 'Warning').map((l) => l.data)).toEqual([
      "Step 'Deploy': #{PackageFolder} is left as written, since no variable has that name; the system value is #{CONTEXT.PackageFolder}",
      "Step 'Notes': #{ReleaseVersion} is left as written, since no variable has that name; the system value is #{CONTEXT.ReleaseVersion}",
      "Step 'Ported': #{Octopus.Release.Number} is left as written, since no variable has that name; the system value is #{CONTEXT.ReleaseVersion}",
      "Step 'Ported': #{Octopus.Environment.Name} is left as written, since no variable has that name; the system value is #{CONTEXT.EnvironmentName}",
      "Step 'Unpackaged': its package property 'Package' is empty, so it runs without a package",
    ]);
  });

  it('fails the deployment when a Stop step fails and skips later steps', async () => {
    const m = await onlineMachine(t, 'fail-a', staging);
    const target = await release(t, { steps: [step('Breaks'), step('Never')] });
    const id = await deployment(t, target, staging);
    const agents = fleet([m], (task) => ({ outcome: task.stepName === 'Breaks' ? 'FAILED' : 'SUCCEEDED' }));
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Failed');
    expect(done.errorCount).toBeGreaterThan(0);
    expect(agents.started.map((s) => s.task.stepName)).toEqual(['Breaks']);
    const tasks = await t.deps.store.deploymentTasks.listForDeployment(id);
    expect(tasks.map((x) => [x.stepName, x.status])).toEqual([
      ['Breaks', 'Failed'],
      ['Never', 'Skipped'],
    ]);
  });

  it('skips the later steps on every machine after a Stop failure on one of them', async () => {
    const a = await onlineMachine(t, 'stop-a', staging);
    const b = await onlineMachine(t, 'stop-b', staging);
    const target = await release(t, { steps: [step('Breaks'), step('Later'), step('Last')] });
    const id = await deployment(t, target, staging);
    fleet([a, b], (_task, machineId) => ({ outcome: machineId === b ? 'FAILED' : 'SUCCEEDED' }));
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Failed');
    const tasks = await t.deps.store.deploymentTasks.listForDeployment(id);
    expect(tasks.map((x) => [x.stepName, x.machineName, x.status])).toEqual([
      ['Breaks', 'stop-a', 'Succeeded'],
      ['Breaks', 'stop-b', 'Failed'],
      ['Later', 'stop-a', 'Skipped'],
      ['Later', 'stop-b', 'Skipped'],
      ['Last', 'stop-a', 'Skipped'],
      ['Last', 'stop-b', 'Skipped'],
    ]);
    const logs = (await t.deps.store.deploymentLogs.read(id, null, 1000)).map((l) => l.data);
    expect(logs.filter((l) => l === "Step 'Later'")).toHaveLength(1);
    expect(logs.filter((l) => l.startsWith('Later on '))).toHaveLength(2);
  });

  it('completes with errors when a ContinueOnError step fails', async () => {
    const m = await onlineMachine(t, 'coe-a', staging);
    const target = await release(t, { steps: [step('Flaky', { errorAction: 'ContinueOnError' }), step('After')] });
    const id = await deployment(t, target, staging);
    const agents = fleet([m], (task) => ({ outcome: task.stepName === 'Flaky' ? 'FAILED' : 'SUCCEEDED' }));
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Completed');
    expect(done.errorCount).toBe(1);
    expect(agents.started.map((s) => s.task.stepName)).toEqual(['Flaky', 'After']);
  });

  it('keeps a rolling window of one: each machine runs all members before the next starts', async () => {
    const machines = [
      await onlineMachine(t, 'roll-c', staging),
      await onlineMachine(t, 'roll-a', staging),
      await onlineMachine(t, 'roll-b', staging),
    ];
    const target = await release(t, {
      steps: [step('Stop', { rollingGroupId: 'g' }), step('Start', { rollingGroupId: 'g' })],
      rollingGroups: [rollingGroup('g', ['step-Stop', 'step-Start'])],
    });
    const id = await deployment(t, target, staging);
    const agents = fleet(machines, () => ({ outcome: 'SUCCEEDED' }));
    await engine.wake([id]);
    expect((await finalStatus(id)).status).toBe('Completed');
    const names = new Map<string, string>([
      [machines[0]!, 'roll-c'],
      [machines[1]!, 'roll-a'],
      [machines[2]!, 'roll-b'],
    ]);
    expect(agents.started.map((s) => `${names.get(s.machineId)}:${s.task.stepName}`)).toEqual([
      'roll-a:Stop',
      'roll-a:Start',
      'roll-b:Stop',
      'roll-b:Start',
      'roll-c:Stop',
      'roll-c:Start',
    ]);
  });

  it('fails the part of an offline machine at once instead of waiting', async () => {
    const m = await onlineMachine(t, 'gone', staging);
    await t
      .db('machines')
      .where({ id: m })
      .update({ last_seen_at: new Date(Date.now() - 3_600_000) });
    const target = await release(t, { steps: [step('Deploy')] });
    const id = await deployment(t, target, staging);
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Failed');
    const logs = await t.deps.store.deploymentLogs.read(id, null, 100);
    expect(logs.some((l) => l.level === 'Error' && l.data.includes("Machine 'gone' is offline"))).toBe(true);
  });

  it('waits for the scheduled time before starting, on the engine clock', async () => {
    const m = await onlineMachine(t, 'sched', staging);
    const target = await release(t, { steps: [step('Later')] });
    const when = new Date(clock.now().getTime() + 60 * 60_000);
    const id = await deployment(t, target, staging, { scheduledFor: when });
    fleet([m], () => ({ outcome: 'SUCCEEDED' }));
    // An hour early: advancing it leaves it Queued, and the sweep (real time) leaves it alone too.
    expect(await engine.orchestrator.advance(id)).toBe('done');
    expect((await t.deps.store.deployments.get(id))!.status).toBe('Queued');
    clock.offsetMs += 60 * 60_000;
    // The hour passed for the agent too: it heartbeat meanwhile.
    await t.db('machines').where({ id: m }).update({ last_seen_at: clock.now() });
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Completed');
    expect(done.startedUtc!.getTime()).toBeGreaterThanOrEqual(when.getTime());
  });

  it('ends a deployment it cannot advance as Failed, saying so in its log, instead of retrying forever', async () => {
    const target = await release(t, { steps: [step('Broken')] });
    // A release whose snapshot lost its steps: planning throws (not a database outage) on every attempt.
    await t
      .db('releases')
      .where({ id: target.releaseId })
      .update({ snapshot: JSON.stringify({ v: 1 }) });
    const id = await deployment(t, target, staging);
    await engine.wake([id]);
    const done = await finalStatus(id);
    expect(done.status).toBe('Failed');
    const logs = await t.db('deployment_logs').where({ deployment_id: id }).orderBy('tick').pluck('data');
    expect(logs.at(-1)).toMatch(/^The deployment failed: Gantry could not advance it after 5 attempts/);
  });

  it('cancels a running deployment: the agent is told, pending steps never start', async () => {
    const m = await onlineMachine(t, 'cancel-me', staging);
    const target = await release(t, { steps: [step('Sleep'), step('Never')] });
    const id = await deployment(t, target, staging);
    const agents = fleet([m], () => null);
    await engine.wake([id]);
    await waitFor(() => agents.started.length === 1, { timeoutMs: 10_000 });
    expect((await engine.agentPort.assignmentsFor(m)).cancel).toEqual([]);
    await t.deps.store.deployments.requestCancellation(id, new Date());
    await engine.wake([id]);
    await waitFor(async () => (await engine.agentPort.assignmentsFor(m)).cancel.length === 1, { timeoutMs: 5_000 });
    // Being cancelled, the task is no longer offered to run.
    expect((await engine.agentPort.assignmentsFor(m)).run).toEqual([]);
    await engine.agentPort.recordResult(m, agents.started[0]!.task.taskId, {
      outcome: 'CANCELLED',
      exitCode: -1,
      message: 'killed',
      lastLogSeq: 0,
    });
    const done = await finalStatus(id);
    expect(done.status).toBe('Cancelled');
    expect(done.cancellationRequestedUtc).not.toBeNull();
    const tasks = await t.deps.store.deploymentTasks.listForDeployment(id);
    expect(tasks.map((x) => x.status)).toEqual(['Cancelled', 'Cancelled']);
  });

  it('stores a result once even when the agent sends it twice', async () => {
    const m = await onlineMachine(t, 'twice', staging);
    const target = await release(t, { steps: [step('Once')] });
    const id = await deployment(t, target, staging);
    const agents = fleet([m], () => null);
    await engine.wake([id]);
    await waitFor(() => agents.started.length === 1, { timeoutMs: 10_000 });
    const taskId = agents.started[0]!.task.taskId;
    await engine.agentPort.recordResult(m, taskId, { outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 0 });
    await engine.agentPort.recordResult(m, taskId, {
      outcome: 'FAILED',
      exitCode: 1,
      message: 'late duplicate',
      lastLogSeq: 0,
    });
    expect((await finalStatus(id)).status).toBe('Completed');
    expect((await t.deps.store.deploymentTasks.get(taskId))!.status).toBe('Succeeded');
  });
  it('runs one deployment per project and environment at a time: the next awaits the slot', async () => {
    const m = await onlineMachine(t, 'slot-a', staging);
    const target = await release(t, { steps: [step('Hold')] });
    const first = await deployment(t, target, staging);
    const second = await deployment(t, target, staging);
    const agents = fleet([m], () => null);
    await engine.wake([first]);
    await waitFor(() => agents.started.length === 1, { timeoutMs: 10_000 });
    await engine.wake([second]);
    await waitFor(async () => (await t.deps.store.deployments.get(second))?.status === 'AwaitingSlot', {
      timeoutMs: 10_000,
    });
    expect(agents.started).toHaveLength(1);
    await engine.agentPort.recordResult(m, agents.started[0]!.task.taskId, {
      outcome: 'SUCCEEDED',
      exitCode: 0,
      message: '',
      lastLogSeq: 0,
    });
    expect((await finalStatus(first)).status).toBe('Completed');
    // Freeing the slot wakes the waiting deployment; it starts and runs its own task.
    await waitFor(() => agents.started.length === 2, { timeoutMs: 10_000 });
    expect(agents.started[1]!.task.deploymentId).toBe(second);
    await engine.agentPort.recordResult(m, agents.started[1]!.task.taskId, {
      outcome: 'SUCCEEDED',
      exitCode: 0,
      message: '',
      lastLogSeq: 0,
    });
    expect((await finalStatus(second)).status).toBe('Completed');
    const logs = (await t.deps.store.deploymentLogs.read(second, null, 100)).map((l) => l.data);
    expect(logs.indexOf('Validating the deployment')).toBeLessThan(logs.indexOf("Deploying release to 'Staging'"));
  });

  it("holds deployments of other projects at the organization's maxConcurrentDeployments", async () => {
    const organization = await t.db('workspaces').where({ id: t.mainWorkspaceId }).first('organization_id');
    const before = await t
      .db('organizations')
      .where({ id: organization.organization_id })
      .first('max_concurrent_deployments');
    await t.db('organizations').where({ id: organization.organization_id }).update({ max_concurrent_deployments: 1 });
    try {
      const m = await onlineMachine(t, 'org-cap', staging);
      const one = await deployment(t, await release(t, { steps: [step('One')] }), staging);
      const other = await deployment(t, await release(t, { steps: [step('Other')] }), staging);
      const agents = fleet([m], () => null);
      await engine.wake([one]);
      await waitFor(() => agents.started.length === 1, { timeoutMs: 10_000 });
      await engine.wake([other]);
      await waitFor(async () => (await t.deps.store.deployments.get(other))?.status === 'AwaitingSlot', {
        timeoutMs: 10_000,
      });
      await engine.agentPort.recordResult(m, agents.started[0]!.task.taskId, {
        outcome: 'SUCCEEDED',
        exitCode: 0,
        message: '',
        lastLogSeq: 0,
      });
      await waitFor(() => agents.started.length === 2, { timeoutMs: 10_000 });
      expect(agents.started[1]!.task.deploymentId).toBe(other);
      await engine.agentPort.recordResult(m, agents.started[1]!.task.taskId, {
        outcome: 'SUCCEEDED',
        exitCode: 0,
        message: '',
        lastLogSeq: 0,
      });
      expect((await finalStatus(other)).status).toBe('Completed');
    } finally {
      await t
        .db('organizations')
        .where({ id: organization.organization_id })
        .update({ max_concurrent_deployments: before.max_concurrent_deployments });
    }
  });

  /**
   * An engine of its own over a store with `parts` replaced, logging into `errors` (what it logged
   * at error level: message, and how many sessions or machines it says), and three machines whose
   * sessions it saw begin and end in one disconnect window.
   */
  async function disconnectsWith(parts: Partial<typeof t.deps.store>, names: string[]) {
    const logged: Array<{ level: number; msg: string; sessions?: number; machines?: number }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const own = createEngine({ store: { ...t.deps.store, ...parts }, clock, bus, secrets: t.deps.secrets, logger });
    const machines = await Promise.all(names.map((name) => onlineMachine(t, name, staging)));
    for (const machineId of machines) await own.agentPort.connected(machineId, `session-${machineId}`, {});
    // Every session's promise settles without an error of its own.
    await Promise.all(machines.map((machineId) => own.agentPort.disconnected(machineId, `session-${machineId}`)));
    const errors = logged.filter((entry) => entry.level >= 50).map((e) => [e.msg, e.sessions ?? e.machines]);
    return { machines, errors };
  }

  it("stores a batch of disconnects even when their deployments' logs cannot be written, and logs that once", async () => {
    // The read of the machines' running tasks, the step after the disconnects are stored, fails.
    const { machines, errors } = await disconnectsWith(
      {
        deploymentTasks: {
          ...t.deps.store.deploymentTasks,
          listDispatchedToMachines: () => Promise.reject(new Error('the log side is down')),
        },
      },
      ['dc-1', 'dc-2', 'dc-3'],
    );
    const rows = await t.db('machines').whereIn('id', machines).select('disconnected_at');
    expect(rows.map((row: { disconnected_at: Date | null }) => row.disconnected_at !== null)).toEqual([
      true,
      true,
      true,
    ]);
    expect(errors).toEqual([["writing agent disconnects to their deployments' logs failed", 3]]);
  });

  it('logs a batch of disconnects it could not store once, not once per session', async () => {
    const { errors } = await disconnectsWith(
      {
        machines: {
          ...t.deps.store.machines,
          recordDisconnects: () => Promise.reject(new Error('the database is down')),
        },
      },
      ['dr-1', 'dr-2', 'dr-3'],
    );
    expect(errors).toEqual([['recording agent disconnects failed', 3]]);
  });

  it('announces the tasks it starts over the bus in one event, and the port reads them back in one call', async () => {
    const a = await onlineMachine(t, 'wake-a', staging);
    const b = await onlineMachine(t, 'wake-b', staging);
    const events: TasksDispatchedEvent[] = [];
    const subscription = await bus.subscribeEvents(EventSubject.allTasksDispatched, (message) => {
      if (message.type === 'tasks.dispatched') events.push(message);
    });
    const target = await release(t, { steps: [step('Wake')] });
    const id = await deployment(t, target, staging);
    await engine.wake([id]);
    await waitFor(() => events.length > 0, { timeoutMs: 10_000, description: 'tasks.dispatched' });
    await subscription.close();
    expect(events).toHaveLength(1);
    expect(events[0]!.deploymentId).toBe(id);
    expect(events[0]!.tasks.map((task) => task.machineId).sort()).toEqual([a, b].sort());
    const read = await engine.agentPort.dispatchedTasks([
      ...events[0]!.tasks.map((task) => task.taskId),
      'no-such-task',
    ]);
    expect(read.map(({ machineId, payload }) => [machineId, payload.taskId]).sort()).toEqual(
      events[0]!.tasks.map((task) => [task.machineId, task.taskId]).sort(),
    );
    expect(read.every(({ payload }) => payload.deploymentId === id && payload.stepName === 'Wake')).toBe(true);
    fleet([a, b], () => ({ outcome: 'SUCCEEDED' }));
    expect((await finalStatus(id)).status).toBe('Completed');
  });
  it('announces a wide start in slices of at most 100 tasks, in the order they start, each task once', async () => {
    const machineIds = await fleetOf(t, 250, staging);
    await t
      .db('machines')
      .whereIn('id', machineIds)
      .update({ agent_credential_hash: t.db.raw("'cred-' || id"), last_seen_at: new Date() });
    cleanups.push(async () => void (await t.db('machine_environments').whereIn('machine_id', machineIds).delete()));
    const { organization_id: organizationId } = await t
      .db('workspaces')
      .where({ id: t.mainWorkspaceId })
      .first('organization_id');
    const { max_parallel_machines: cap } = await t
      .db('organizations')
      .where({ id: organizationId })
      .first('max_parallel_machines');
    await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: 250 });
    cleanups.push(
      async () =>
        void (await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: cap })),
    );
    const events: TasksDispatchedEvent[] = [];
    const subscription = await bus.subscribeEvents(EventSubject.allTasksDispatched, (message) => {
      if (message.type === 'tasks.dispatched') events.push(message);
    });
    const id = await deployment(t, await release(t, { steps: [step('Wide')] }), staging);
    await engine.wake([id]);
    const announced = () => events.filter((event) => event.deploymentId === id).flatMap((event) => event.tasks);
    await waitFor(() => announced().length >= 250, { timeoutMs: 20_000, description: '250 tasks announced' });
    await subscription.close();
    expect(events.filter((event) => event.deploymentId === id).map((event) => event.tasks.length)).toEqual([
      100, 100, 50,
    ]);
    expect(new Set(announced().map((task) => task.taskId)).size).toBe(250);
    expect(
      announced()
        .map((task) => task.machineId)
        .sort(),
    ).toEqual([...machineIds].sort());
    // In the order they start: by machine name (m-1, m-10, m-100, …), as the plan orders a step's targets.
    const nameOf = new Map(machineIds.map((machineId, i) => [machineId, `m-${i + 1}`]));
    const names = announced().map((task) => nameOf.get(task.machineId)!);
    expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    fleet(machineIds, () => ({ outcome: 'SUCCEEDED' }));
    expect((await finalStatus(id, 30_000)).status).toBe('Completed');
  }, 60_000);
  it('records agents connecting together, and reads their tasks, in one statement per batch, each answered for its own machine', async () => {
    const names = ['sync-a', 'sync-b', 'sync-c'];
    const machines = await Promise.all(names.map((name) => onlineMachine(t, name, staging)));
    const events: TasksDispatchedEvent[] = [];
    const subscription = await bus.subscribeEvents(EventSubject.allTasksDispatched, (message) => {
      if (message.type === 'tasks.dispatched') events.push(message);
    });
    const id = await deployment(t, await release(t, { steps: [step('Sync')] }), staging);
    await engine.wake([id]);
    await waitFor(() => events.length > 0, { timeoutMs: 10_000, description: 'tasks.dispatched' });
    await subscription.close();
    const taskOf = new Map(events[0]!.tasks.map((task) => [task.machineId, task.taskId]));
    // sync-b's agent had been gone for a minute.
    await t
      .db('machines')
      .where({ id: machines[1] })
      .update({ disconnected_at: new Date(clock.now().getTime() - 60_000) });
    const hellos: number[] = [];
    const reads: number[] = [];
    const own = createEngine({
      store: {
        ...t.deps.store,
        machines: {
          ...t.deps.store.machines,
          recordConnectedMany: (batch) => (hellos.push(batch.length), t.deps.store.machines.recordConnectedMany(batch)),
        },
        deploymentTasks: {
          ...t.deps.store.deploymentTasks,
          listDispatchedToMachines: (ids) => (
            reads.push(ids.length),
            t.deps.store.deploymentTasks.listDispatchedToMachines(ids)
          ),
        },
      },
      clock,
      bus,
      secrets: t.deps.secrets,
      logger: createLogger('silent'),
    });
    const answers = await Promise.all(machines.map((m) => own.agentPort.connected(m, `session-${m}`, {})));
    expect(answers).toEqual(machines.map(() => ({ pendingUpgrade: null })));
    expect(hellos).toEqual([3]);
    // The machine back from offline is said so in its deployment's log (one read of its tasks).
    expect(reads).toEqual([1]);
    const back = await t.db('deployment_logs').where({ deployment_id: id }).andWhereLike('data', '%back online%');
    expect(back.map((line: { data: string }) => line.data)).toEqual([
      "Machine 'sync-b' is back online after 60 s; 'Sync' goes on there",
    ]);
    reads.length = 0;
    const assigned = await Promise.all(machines.map((m) => own.agentPort.assignmentsFor(m)));
    expect(reads).toEqual([3]);
    expect(assigned.map(({ run, cancel }) => [run.map((task) => task.taskId), cancel])).toEqual(
      machines.map((m) => [[taskOf.get(m)], []]),
    );
    fleet(machines, () => ({ outcome: 'SUCCEEDED' }));
    expect((await finalStatus(id)).status).toBe('Completed');
  });
});
