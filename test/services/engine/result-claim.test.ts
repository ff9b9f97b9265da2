/**
 * A task end recorded on the replica that knows the deployment's run takes the lease in the same
 * statement (Orchestrator.finishAndClaim), so the window's next task starts without a claim
 * statement of its own; when another replica holds the lease, the end is recorded all the same
 * and the deployment goes on through the bus once the lease is free. An engine of its own with a
 * slow sweep, so the only advances are the ones these tests cause.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, isFinalStatus } from '../../../services/core/index.ts';
import { EventSubject, InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import type { RunTaskPayload } from '../../../services/engine/agent-port.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  deployment,
  environmentId,
  onlineMachine,
  release,
  rollingGroup,
  step,
} from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let engine: Engine;
let bus: InProcessBus;
let staging: string;
const claims: string[] = [];
const releases: string[] = [];
let advancing = 0;

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  bus = new InProcessBus({ logger, retryBaseMs: 50 });
  const { store } = t.deps;
  const claim = store.deployments.claim.bind(store.deployments);
  // Counts the claim statements (the engine's store is this object).
  store.deployments.claim = (id, ...rest) => {
    claims.push(id);
    return claim(id, ...rest);
  };
  // …and the lease releases of their own (not those a record statement makes).
  const releaseLease = store.deployments.releaseLease.bind(store.deployments);
  store.deployments.releaseLease = (id, owner) => {
    releases.push(id);
    return releaseLease(id, owner);
  };
  engine = createEngine({
    store,
    clock: { now: () => new Date() },
    bus,
    secrets: t.deps.secrets,
    logger,
    sweepIntervalMs: 60_000,
  });
  // Advances running on this engine now: an advance's last statement can release the lease while
  // its own work goes on for a few turns, and an end recorded meanwhile is (rightly) left to a
  // wake-up and a claim of its own: not the case these tests set up.
  const { orchestrator } = engine;
  const advance = orchestrator.advance.bind(orchestrator);
  orchestrator.advance = async (...args) => {
    advancing++;
    try {
      return await advance(...args);
    } finally {
      advancing--;
    }
  };
  await engine.start();
  staging = await environmentId(t, 'Staging');
});

/** Each test's machines leave Staging after it: the next test's deployment targets its own only. */
const machinesOfTest: string[] = [];
afterEach(async () => {
  await t.db('machine_environments').whereIn('machine_id', machinesOfTest.splice(0)).delete();
});

afterAll(async () => {
  await engine.stop();
  await bus.close();
});

/** The one task the machines are running now that was not seen before. */
async function nextTask(machineIds: string[], seen: Set<string>): Promise<{ machineId: string; task: RunTaskPayload }> {
  return waitFor(
    async () => {
      for (const machineId of machineIds)
        for (const task of (await engine.agentPort.assignmentsFor(machineId)).run)
          if (!seen.has(task.taskId)) {
            seen.add(task.taskId);
            return { machineId, task };
          }
      return null;
    },
    { description: 'the next task' },
  );
}

const succeeded = { outcome: 'SUCCEEDED' as const, exitCode: 0, message: '', lastLogSeq: 0 };

async function rolling(prefix: string, machineCount: number, windowSize: number) {
  const machines: string[] = [];
  for (let i = 0; i < machineCount; i++) machines.push(await onlineMachine(t, `${prefix}-${'abcd'[i]}`, staging));
  machinesOfTest.push(...machines);
  const target = await release(t, {
    steps: [step('Deploy', { rollingGroupId: 'g' })],
    rollingGroups: [rollingGroup('g', ['step-Deploy'], { windowSize })],
  });
  return { machines, id: await deployment(t, target, staging) };
}

const rollingOfOne = (prefix: string) => rolling(prefix, 3, 1);

/** The advance that started the running tasks is over: its lease is released, and its work here done. */
async function leaseReleased(id: string) {
  await waitFor(
    async () => (await t.db('deployments').where({ id }).first('lease_owner')).lease_owner === null && advancing === 0,
  );
}

async function finalStatus(id: string) {
  return waitFor(async () => {
    const d = await t.deps.store.deployments.get(id);
    return d && isFinalStatus(d.status) ? d : null;
  });
}

describe('a task end recorded here', () => {
  it('takes the lease in its own statement: the next task of the window starts without a claim', async () => {
    const { machines, id } = await rollingOfOne('claim');
    await engine.wake([id]);
    const seen = new Set<string>();
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { machineId, task } = await nextTask(machines, seen);
      order.push(machineId);
      // As a script that runs a while would: the advance that started it is over.
      await leaseReleased(id);
      await engine.agentPort.recordResult(machineId, task.taskId, succeeded);
    }
    const done = await finalStatus(id);
    expect(done.status).toBe('Completed');
    expect(order).toEqual(machines);
    // The final status is written before the advance that wrote it lets the lease go.
    await leaseReleased(id);
    // Validation claimed once; each end took the lease itself (advance_seq counts every claim).
    expect(claims.filter((claimed) => claimed === id)).toHaveLength(1);
    const row = await t.db('deployments').where({ id }).first('advance_seq', 'lease_owner');
    expect(row).toEqual({ advance_seq: 4, lease_owner: null });
    // Released by a statement of its own after validation and at the end; the two window changes
    // released it in the statement that started the next task.
    expect(releases.filter((released) => released === id)).toHaveLength(2);
  });

  it("advances again at once when the statement that released the lease started an offline machine's task", async () => {
    const { machines, id } = await rollingOfOne('gone');
    await engine.wake([id]);
    const seen = new Set<string>();
    const first = await nextTask(machines, seen);
    await leaseReleased(id);
    // The next machine's agent went away: its task fails as soon as it is started.
    await t.db('machines').where({ id: machines[1] }).update({ disconnected_at: new Date() });
    await engine.agentPort.recordResult(first.machineId, first.task.taskId, succeeded);
    // The failure is looked at by another advance at once, not by a sweep (60 s here).
    const done = await finalStatus(id);
    expect(done.status).toBe('Failed');
    const tasks = await t.db('deployment_tasks').where({ deployment_id: id }).orderBy('machine_name');
    expect(tasks.map((task: { status: string }) => task.status)).toEqual(['Succeeded', 'Failed', 'Skipped']);
    expect(tasks[1].message).toMatch(/is offline/);
  });

  it('does not lose a wake-up that comes while its statement takes the lease', async () => {
    const { machines, id } = await rolling('pair', 4, 2);
    await engine.wake([id]);
    const seen = new Set<string>();
    const first = [await nextTask(machines, seen), await nextTask(machines, seen)];
    await leaseReleased(id);
    // The second task ends elsewhere (another replica recorded it), and its wake-up reaches this
    // replica while the first task's end is being written here, taking the lease: the advance
    // that follows knows only the first end, so the wake-up must still be owed another one.
    await t
      .db('deployment_tasks')
      .where({ id: first[1]!.task.taskId })
      .update({ status: 'Succeeded', exit_code: 0, message: 'succeeded', finished_at: new Date() });
    const recorded = engine.agentPort.recordResult(first[0]!.machineId, first[0]!.task.taskId, succeeded);
    await new Promise((resolve) => setImmediate(resolve));
    await engine.wake([id]);
    await recorded;
    // Both slots are filled again, without waiting for a sweep (60 s here).
    const next = [await nextTask(machines, seen), await nextTask(machines, seen)];
    expect(next.map((n) => n.machineId).sort()).toEqual(machines.slice(2).sort());
    await Promise.all(
      next.map(({ machineId, task }) => engine.agentPort.recordResult(machineId, task.taskId, succeeded)),
    );
    expect((await finalStatus(id)).status).toBe('Completed');
  });

  it('learns every end its statement recorded: a burst of results refills all the slots they freed in one advance', async () => {
    const { machines, id } = await rolling('burst', 4, 2);
    // What each advance started, one event per advance that started tasks.
    const dispatches: string[][] = [];
    const subscription = await bus.subscribeEvents(EventSubject.tasksDispatched(id), (message) => {
      if (message.type === 'tasks.dispatched') dispatches.push(message.tasks.map((task) => task.machineId).sort());
    });
    try {
      await engine.wake([id]);
      const seen = new Set<string>();
      const first = [await nextTask(machines, seen), await nextTask(machines, seen)];
      await leaseReleased(id);
      // Both results in one turn, as agents answering together are read: one statement records
      // both ends, and the one that takes the lease starts both next tasks, not one.
      await Promise.all(
        first.map(({ machineId, task }) => engine.agentPort.recordResult(machineId, task.taskId, succeeded)),
      );
      const next = [await nextTask(machines, seen), await nextTask(machines, seen)];
      expect(next.map((n) => n.machineId).sort()).toEqual(machines.slice(2).sort());
      expect(dispatches).toEqual([machines.slice(0, 2).sort(), machines.slice(2).sort()]);
      await Promise.all(
        next.map(({ machineId, task }) => engine.agentPort.recordResult(machineId, task.taskId, succeeded)),
      );
      expect((await finalStatus(id)).status).toBe('Completed');
    } finally {
      await subscription.close();
    }
  });

  it('is recorded while another replica holds the lease, which the deployment then waits for', async () => {
    const { machines, id } = await rollingOfOne('held');
    await engine.wake([id]);
    const seen = new Set<string>();
    const first = await nextTask(machines, seen);
    // Another replica's unexpired lease, as if it were advancing the deployment now.
    const until = new Date(Date.now() + 1_500);
    await t.db('deployments').where({ id }).update({ lease_owner: 'other-replica', lease_until: until });
    await engine.agentPort.recordResult(first.machineId, first.task.taskId, succeeded);
    expect((await t.db('deployment_tasks').where({ id: first.task.taskId }).first('status')).status).toBe('Succeeded');
    const second = await nextTask(machines, seen);
    expect(Date.now()).toBeGreaterThanOrEqual(until.getTime());
    expect(second.machineId).toBe(machines[1]);
    await engine.agentPort.recordResult(second.machineId, second.task.taskId, succeeded);
    const third = await nextTask(machines, seen);
    await engine.agentPort.recordResult(third.machineId, third.task.taskId, succeeded);
    expect((await finalStatus(id)).status).toBe('Completed');
  });
});
