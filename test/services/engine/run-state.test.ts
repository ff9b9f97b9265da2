/**
 * A replica keeps a running deployment's task statuses between its advances (a refill reads only
 * what ended since). Two replicas that take turns on one deployment must each see the other's
 * starts: a replica whose last claim is not the one before its current claim reads the tasks again.
 * Engines here are not started: the test drives each advance itself, in the order it wants.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../services/core/index.ts';
import { InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
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
const buses: InProcessBus[] = [];
let a: Engine;
let b: Engine;

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  const replica = (replicaId: string) => {
    const bus = new InProcessBus({ logger });
    buses.push(bus);
    return createEngine({
      store: t.deps.store,
      clock: { now: () => new Date() },
      bus,
      secrets: t.deps.secrets,
      logger,
      replicaId,
    });
  };
  a = replica('replica-a');
  b = replica('replica-b');
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
});
