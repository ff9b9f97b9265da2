/**
 * Statements whose size does not grow with the fleet: a deployment to 10,002 machines plans,
 * starts and reads its tasks in statements of fixed size (PostgreSQL allows 65,535 bind
 * parameters; the task insert used 7 per machine, and such a deployment never started).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { deployment, environmentId, everywhereTasks, fleetOf, release, step } from '../../helpers/engine-fixtures.ts';

const FLEET = 10_002;
let t: TestContext;
let deploymentId: string;
let machineIds: string[];

beforeAll(async () => {
  t = await testApp();
  const staging = await environmentId(t, 'Staging');
  // Seeded in statements of their own (arrays again), as the fleet would have been over time.
  machineIds = await fleetOf(t, FLEET, staging);
  deploymentId = await deployment(t, await release(t, { steps: [step('Everywhere')] }), staging);
}, 120_000);

describe('a deployment to 10,002 machines', () => {
  it('inserts, starts and reads its tasks, each in one statement', async () => {
    const { deploymentTasks, deploymentMachines, deploymentLogs } = t.deps.store;
    const tasks = everywhereTasks(deploymentId, machineIds);
    expect(await deploymentTasks.insertManyCounted(tasks)).toBe(FLEET);
    const inserted = await deploymentTasks.listForDeployment(deploymentId);
    expect(inserted).toHaveLength(FLEET);
    expect(new Set(inserted.map((task) => task.machineId))).toEqual(new Set(machineIds));
    // Planning again after a failover adds nothing.
    expect(await deploymentTasks.insertManyCounted(tasks.map((task) => ({ ...task, id: newId() })))).toBe(0);

    const ids = tasks.map((task) => task.id);
    // Started with a line each, their machines read back: one record statement.
    const lines = tasks.map((task) => ({
      entry: { id: task.id, level: 'Information' as const, data: `Running on ${task.machineName}`, taskId: task.id },
      when: [task.id],
    }));
    const started = await deploymentLogs.record(deploymentId, [{ starts: { taskIds: ids, lines } }], new Date());
    expect(started.started.size).toBe(FLEET);
    expect(started.stored).toHaveLength(FLEET);
    expect(new Set([...started.started.values()].map((machine) => machine?.machineId))).toEqual(new Set(machineIds));
    expect(await deploymentTasks.listDispatchedByIds(ids)).toHaveLength(FLEET);
    expect((await deploymentMachines.getMany(machineIds)).size).toBe(FLEET);
  }, 120_000);

  it('lists the machines with their environments', async () => {
    const page = await t.admin.get('/api/machine', { workspaceId: t.mainWorkspaceId, take: '500' });
    expect(page.status, page.text).toBe(200);
    expect(page.body.machines).toHaveLength(500);
    expect(page.body.machines.every((m: { environments: unknown[] }) => m.environments.length === 1)).toBe(true);
  });
});
