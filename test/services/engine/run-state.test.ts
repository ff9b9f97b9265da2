/**
 * A replica keeps a running deployment's task statuses between its advances (a refill reads only
 * what ended since). Two replicas that take turns on one deployment must each see the other's
 * starts: a replica whose last claim is not the one before its current claim reads the tasks again.
 * Engines here are not started: the test drives each advance itself, in the order it wants.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, newId } from '../../../services/core/index.ts';
import { HEARTBEAT_WINDOW_MS } from '../../../services/domain/machines.ts';
import { InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import { DEFAULT_TIMING } from '../../../services/engine/orchestrator.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import {
  deployment,
  environmentId,
  onlineMachine,
  release,
  rollingGroup,
  step,
} from '../../helpers/engine-fixtures.ts';

let t: TestContext;
const systemClock = { now: () => new Date() };
const buses: InProcessBus[] = [];
let a: Engine;
let b: Engine;
/** Keeps two tasks stored ahead of what started: a wide deployment's tail in small steps. */
let narrow: Engine;
/** Commits two starts with a validation, the rest of the first window after. */
let sliced: Engine;
/** As `sliced`, but once armed its clock leaps past the heartbeat window when the tail's tasks are stored. */
let lateTail: Engine;
let leapArmed = false;

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  const replica = (
    replicaId: string,
    storeAheadTasks?: number,
    firstSliceTasks?: number,
    clock = systemClock,
    store = t.deps.store,
  ) => {
    const bus = new InProcessBus({ logger });
    buses.push(bus);
    return createEngine({
      store,
      clock,
      bus,
      secrets: t.deps.secrets,
      logger,
      replicaId,
      storeAheadTasks,
      firstSliceTasks,
    });
  };
  a = replica('replica-a');
  b = replica('replica-b');
  narrow = replica('replica-narrow', 2);
  // Its clock moves on at every reading, so which write took a time of its own shows.
  let last = 0;
  sliced = replica('replica-sliced', undefined, 2, { now: () => new Date((last = Math.max(Date.now(), last + 1))) });
  // The tail's insert is the first one outside validation's transaction (whose store is not this).
  let leap = 0;
  const { store } = t.deps;
  const leapingStore = {
    ...store,
    deploymentTasks: {
      ...store.deploymentTasks,
      insertManyCounted: async (...args: Parameters<typeof store.deploymentTasks.insertManyCounted>) => {
        const inserted = await store.deploymentTasks.insertManyCounted(...args);
        // Past the heartbeat window (offline), short of the lost-contact timeout (running tasks kept).
        if (leapArmed) [leap, leapArmed] = [(HEARTBEAT_WINDOW_MS + DEFAULT_TIMING.agentLostMs) / 2, false];
        return inserted;
      },
    },
  };
  lateTail = replica('replica-late-tail', undefined, 2, { now: () => new Date(Date.now() + leap) }, leapingStore);
});

afterAll(async () => {
  for (const bus of buses) await bus.close();
});

async function tasks(id: string): Promise<Array<{ machine_name: string; status: string; id: string }>> {
  return t
    .db('deployment_tasks')
    .where({ deployment_id: id })
    .orderBy('machine_name')
    .select('id', 'machine_name', 'status');
}

/** A task of step 'Only' on this machine, as an attempt of the validation that went no further stored it. */
async function storedEarlier(deploymentId: string, machineId: string, machineName: string): Promise<string> {
  const id = newId();
  await t.deps.store.deploymentTasks.insertManyCounted([
    { id, deploymentId, stageIndex: 0, stepId: 'step-Only', stepName: 'Only', machineId, machineName },
  ]);
  return id;
}

async function succeed(engine: Engine, taskId: string): Promise<void> {
  expect(await engine.orchestrator.finishTask(taskId, { status: 'Succeeded', exitCode: 0, message: 'succeeded' })).toBe(
    true,
  );
}

describe('task statuses kept between advances', () => {
  it('are read again after another replica advanced the deployment, so its starts are seen', async () => {
    const staging = await environmentId(t, 'Staging');
    for (const name of ['turn-a', 'turn-b', 'turn-c']) await onlineMachine(t, name, staging);
    const target = await release(t, {
      steps: [step('Only', { rollingGroupId: 'g' })],
      rollingGroups: [rollingGroup('g', ['step-Only'])],
    });
    const id = await deployment(t, target, staging);

    await a.orchestrator.advance(id); // validates, starts turn-a, keeps the statuses
    let now = await tasks(id);
    expect(now.map((task) => task.status)).toEqual(['Running', 'Pending', 'Pending']);
    await succeed(a, now[0]!.id);

    await b.orchestrator.advance(id); // B starts turn-b: A does not know
    now = await tasks(id);
    expect(now.map((task) => task.status)).toEqual(['Succeeded', 'Running', 'Pending']);
    await succeed(b, now[1]!.id);

    // With what it kept, A would start turn-b again (refused by the guard) and nothing else.
    await a.orchestrator.advance(id);
    now = await tasks(id);
    expect(now.map((task) => task.status)).toEqual(['Succeeded', 'Succeeded', 'Running']);
    await succeed(a, now[2]!.id);

    await a.orchestrator.advance(id);
    expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Completed');
  });

  it('inserts the tasks a replica that died after the first dispatch left out, and runs them', async () => {
    const staging = await environmentId(t, 'Staging');
    await t.db('machine_environments').where({ environment_id: staging }).delete(); // the test before's machines
    for (const name of ['gap-a', 'gap-b', 'gap-c']) await onlineMachine(t, name, staging);
    const target = await release(t, {
      steps: [step('Only', { rollingGroupId: 'g' })],
      rollingGroups: [rollingGroup('g', ['step-Only'])],
    });
    const id = await deployment(t, target, staging);
    await a.orchestrator.advance(id);
    // As if A died before inserting the tasks that were not started at once.
    await t.db('deployment_tasks').where({ deployment_id: id, status: 'Pending' }).delete();
    let now = await tasks(id);
    expect(now.map((task) => `${task.machine_name}:${task.status}`)).toEqual(['gap-a:Running']);
    await succeed(a, now[0]!.id);

    await b.orchestrator.advance(id);
    now = await tasks(id);
    expect(now.map((task) => `${task.machine_name}:${task.status}`)).toEqual([
      'gap-a:Succeeded',
      'gap-b:Running',
      'gap-c:Pending',
    ]);
    await succeed(b, now[1]!.id);
    await b.orchestrator.advance(id);
    await succeed(b, (await tasks(id))[2]!.id);
    await b.orchestrator.advance(id);
    expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Completed');
  });

  it('starts from the tasks an earlier attempt of the validation stored, making no second task of a target', async () => {
    const staging = await environmentId(t, 'Staging');
    await t.db('machine_environments').where({ environment_id: staging }).delete(); // the tests before's machines
    const [first] = await Promise.all(['again-a', 'again-b', 'again-c'].map((name) => onlineMachine(t, name, staging)));
    const target = await release(t, {
      steps: [step('Only', { rollingGroupId: 'g' })],
      rollingGroups: [rollingGroup('g', ['step-Only'])],
    });
    const id = await deployment(t, target, staging);
    // Stored by an attempt that went no further: the first target's task.
    const earlier = await storedEarlier(id, first!, 'again-a');
    await a.orchestrator.advance(id);
    let now = await tasks(id);
    expect(now.map((task) => `${task.machine_name}:${task.status}`)).toEqual([
      'again-a:Running',
      'again-b:Pending',
      'again-c:Pending',
    ]);
    expect(now[0]!.id).toBe(earlier);
    for (const at of [0, 1, 2]) {
      await succeed(a, now[at]!.id);
      await a.orchestrator.advance(id);
      now = await tasks(id);
    }
    expect(now.map((task) => `${task.machine_name}:${task.status}`)).toEqual([
      'again-a:Succeeded',
      'again-b:Succeeded',
      'again-c:Succeeded',
    ]);
    expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Completed');
  });

  describe('a plan inserted a few tasks per advance after the first dispatch', () => {
    async function wide(names: string[]): Promise<string> {
      const staging = await environmentId(t, 'Staging');
      await t.db('machine_environments').where({ environment_id: staging }).delete(); // earlier tests' machines
      for (const name of names) await onlineMachine(t, name, staging);
      const target = await release(t, {
        steps: [step('Only', { rollingGroupId: 'g' })],
        rollingGroups: [rollingGroup('g', ['step-Only'])],
      });
      return deployment(t, target, staging);
    }
    const statuses = async (id: string) => (await tasks(id)).map((task) => `${task.machine_name}:${task.status}`);

    it('stores what each refill starts before starting it, and every target by the end', async () => {
      const id = await wide(['w-1', 'w-2', 'w-3', 'w-4', 'w-5', 'w-6', 'w-7']);
      await narrow.orchestrator.advance(id); // starts w-1, then inserts two ahead
      expect(await statuses(id)).toEqual(['w-1:Running', 'w-2:Pending', 'w-3:Pending']);
      for (let k = 0; k < 6; k++) {
        const running = (await tasks(id)).find((task) => task.status === 'Running')!;
        await succeed(narrow, running.id);
        await narrow.orchestrator.advance(id);
        const now = await tasks(id);
        expect(now.filter((task) => task.status === 'Running')).toHaveLength(1);
        // One more stored per advance (as many as it started), after its start went out: two ahead.
        expect(now).toHaveLength(Math.min(7, 3 + (k + 1)));
      }
      await succeed(narrow, (await tasks(id)).find((task) => task.status === 'Running')!.id);
      await narrow.orchestrator.advance(id);
      expect(await statuses(id)).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `w-${n}:Succeeded`));
      expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Completed');
    });

    it('records every target of a cancelled deployment, stored yet or not', async () => {
      const id = await wide(['c-1', 'c-2', 'c-3', 'c-4', 'c-5', 'c-6']);
      await narrow.orchestrator.advance(id);
      expect(await tasks(id)).toHaveLength(3);
      await t
        .db('deployments')
        .where({ id })
        .update({ cancellation_requested_at: new Date(Date.now() - 60 * 60_000) });
      await narrow.orchestrator.advance(id);
      expect(await statuses(id)).toEqual(['c-1:Cancelled', ...[2, 3, 4, 5, 6].map((n) => `c-${n}:Cancelled`)]);
      expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Cancelled');
    });

    it('leaves another replica, which lacks the unstored tasks, to insert them', async () => {
      const id = await wide(['r-1', 'r-2', 'r-3', 'r-4', 'r-5']);
      await narrow.orchestrator.advance(id);
      expect(await tasks(id)).toHaveLength(3);
      await succeed(narrow, (await tasks(id))[0]!.id);
      await b.orchestrator.advance(id); // reads the tasks in full: two are missing
      expect(await statuses(id)).toEqual(['r-1:Succeeded', 'r-2:Running', 'r-3:Pending', 'r-4:Pending', 'r-5:Pending']);
      // The replica that validated learns another advanced it, and drops what it kept.
      for (let k = 0; k < 4; k++) {
        await succeed(narrow, (await tasks(id)).find((task) => task.status === 'Running')!.id);
        await narrow.orchestrator.advance(id);
      }
      expect(await statuses(id)).toEqual([1, 2, 3, 4, 5].map((n) => `r-${n}:Succeeded`));
      expect(await tasks(id)).toHaveLength(5);
    });
  });

  describe('a first window wider than the slice validation commits', () => {
    async function windowOfFive(names: string[]): Promise<{ releaseId: string; projectId: string; staging: string }> {
      const staging = await environmentId(t, 'Staging');
      await t.db('machine_environments').where({ environment_id: staging }).delete(); // earlier tests' machines
      for (const name of names) await onlineMachine(t, name, staging);
      const target = await release(t, {
        steps: [step('Only', { rollingGroupId: 'g' })],
        rollingGroups: [rollingGroup('g', ['step-Only'], { windowSize: 5 })],
      });
      return { ...target, staging };
    }
    const names = (prefix: string) => [1, 2, 3, 4, 5, 6, 7].map((n) => `${prefix}-${n}`);
    const statuses = async (id: string) => (await tasks(id)).map((task) => `${task.machine_name}:${task.status}`);
    const logLines = async (id: string): Promise<string[]> =>
      t.db('deployment_logs').where({ deployment_id: id }).orderBy('tick').pluck('data');

    it('starts the whole window in the one advance, each start logged once, and runs every target once', async () => {
      const target = await windowOfFive(names('s'));
      const id = await deployment(t, target, target.staging);
      await sliced.orchestrator.advance(id);
      expect(await statuses(id)).toEqual([
        ...[1, 2, 3, 4, 5].map((n) => `s-${n}:Running`),
        ...[6, 7].map((n) => `s-${n}:Pending`),
      ]);
      const lines = await logLines(id);
      const runningLines = lines.filter((line) => line.startsWith("Running 'Only' on"));
      expect(runningLines).toEqual([1, 2, 3, 4, 5].map((n) => `Running 'Only' on s-${n}`));
      expect(lines.filter((line) => line === "Step 'Only'")).toHaveLength(1);
      // The head's lines (validation's, then its starts) come before the tail's.
      expect(lines.indexOf(lines.find((line) => line.startsWith('Deploying'))!)).toBeLessThan(
        lines.indexOf("Running 'Only' on s-1"),
      );
      // The tail (s-3 to s-5) started after the head's commit, and says so in its start time.
      const startedAt = new Map(
        (await t.db('deployment_tasks').where({ deployment_id: id }).select('machine_name', 'started_at')).map(
          (row: { machine_name: string; started_at: Date | null }) => [row.machine_name, row.started_at?.getTime()],
        ),
      );
      for (const tail of ['s-3', 's-4', 's-5'])
        expect(startedAt.get(tail)).toBeGreaterThan(Math.max(startedAt.get('s-1')!, startedAt.get('s-2')!));
      for (let k = 0; k < 7; k++) {
        const running = (await tasks(id)).find((task) => task.status === 'Running');
        if (!running) break;
        await succeed(sliced, running.id);
        await sliced.orchestrator.advance(id);
      }
      expect(await statuses(id)).toEqual(names('s').map((name) => `${name}:Succeeded`));
      expect((await t.db('deployments').where({ id }).first('status')).status).toBe('Completed');
    });

    it("judges whether the tail's machines are online at the tail's start, not at validation's", async () => {
      const target = await windowOfFive(names('o'));
      const id = await deployment(t, target, target.staging);
      leapArmed = true;
      await lateTail.orchestrator.advance(id);
      const now = await t.db('deployment_tasks').where({ deployment_id: id }).orderBy('machine_name');
      // The head was handed over while its agents were recent; by the tail's start none is.
      expect(now.slice(0, 2).map((task) => `${task.machine_name}:${task.status}`)).toEqual([
        'o-1:Running',
        'o-2:Running',
      ]);
      for (const task of now.slice(2, 5)) {
        expect(task.status).toBe('Failed');
        expect(task.message).toContain('is offline');
      }
    });

    it('stores every target of a deployment that waits for its slot, the tail of its first window too', async () => {
      const target = await windowOfFive(names('q'));
      const ahead = await deployment(t, target, target.staging);
      await sliced.orchestrator.advance(ahead);
      const waiting = await deployment(t, target, target.staging);
      await sliced.orchestrator.advance(waiting);
      expect((await t.db('deployments').where({ id: waiting }).first('status')).status).toBe('AwaitingSlot');
      expect(await statuses(waiting)).toEqual(names('q').map((name) => `${name}:Pending`));
      await t.db('deployments').where({ id: ahead }).update({ status: 'Completed', completed_at: new Date() });
      await sliced.orchestrator.advance(waiting);
      expect(await statuses(waiting)).toEqual([
        ...[1, 2, 3, 4, 5].map((n) => `q-${n}:Running`),
        ...[6, 7].map((n) => `q-${n}:Pending`),
      ]);
    });

    it('starts the window from the tasks an earlier attempt stored, making no second task of a target', async () => {
      const target = await windowOfFive(names('e'));
      const id = await deployment(t, target, target.staging);
      const machine = await t.db('machines').where({ name: 'e-4' }).first('id');
      const earlier = await storedEarlier(id, machine.id, 'e-4');
      await sliced.orchestrator.advance(id);
      const now = await tasks(id);
      expect(now.map((task) => `${task.machine_name}:${task.status}`)).toEqual([
        ...[1, 2, 3, 4, 5].map((n) => `e-${n}:Running`),
        ...[6, 7].map((n) => `e-${n}:Pending`),
      ]);
      expect(now[3]!.id).toBe(earlier);
    });
  });
});
