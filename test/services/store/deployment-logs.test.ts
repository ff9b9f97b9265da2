import { beforeAll, describe, expect, it } from 'vitest';
import { dateToTicks, newId } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let deploymentId: string;

beforeAll(async () => {
  t = await testApp();
  const environment = await t.db('environments').where({ workspace_id: t.mainWorkspaceId }).first();
  const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Logs' });
  const releaseId = newId();
  await t.db('releases').insert({
    id: releaseId,
    workspace_id: t.mainWorkspaceId,
    project_id: project.body.projectId,
    version: '1.0.0',
    snapshot: '{}',
  });
  deploymentId = newId();
  await t.deps.store.deployments.insert([
    {
      id: deploymentId,
      workspaceId: t.mainWorkspaceId,
      projectId: project.body.projectId,
      releaseId,
      environmentId: environment.id,
      environmentName: environment.name,
      automatic: false,
      excludeStepNames: [],
      machineMode: 'All',
      machineIds: [],
      redownloadPackages: false,
      scheduledFor: null,
    },
  ]);
});

const append = (entries: Parameters<TestContext['deps']['store']['deploymentLogs']['append']>[1], now = new Date()) =>
  t.deps.store.deploymentLogs.append(deploymentId, entries, now);

describe('deployment logs', () => {
  it('gives every line a unique, increasing tick beyond 2^53, even when written concurrently at the same instant', async () => {
    const now = new Date();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        append(
          [
            { level: 'Information', data: `line ${i}` },
            { level: 'Information', data: `more ${i}` },
          ],
          now,
        ),
      ),
    );
    const entries = await t.deps.store.deploymentLogs.read(deploymentId, null, 1000);
    expect(entries).toHaveLength(40);
    const ticks = entries.map((e) => e.tick);
    expect(new Set(ticks).size).toBe(40);
    expect(ticks[0]! >= dateToTicks(now)).toBe(true);
    expect(ticks[0]! > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]! > ticks[i - 1]!).toBe(true);
  });

  it('reads strictly after a tick, in order', async () => {
    const all = await t.deps.store.deploymentLogs.read(deploymentId, null, 1000);
    const middle = all[9]!.tick;
    const after = await t.deps.store.deploymentLogs.read(deploymentId, middle, 1000);
    expect(after.map((e) => e.id)).toEqual(all.slice(10).map((e) => e.id));
  });

  it('stores a re-sent agent line once and counts errors and warnings once', async () => {
    const before = await t.deps.store.deployments.get(deploymentId);
    const batch = [
      { level: 'Warning' as const, data: 'careful', taskId: 'task-1', agentSeq: 1 },
      { level: 'Error' as const, data: 'broken', taskId: 'task-1', agentSeq: 2 },
    ];
    expect(await append(batch)).toHaveLength(2);
    expect(await append(batch)).toHaveLength(0);
    expect(
      await append([...batch, { level: 'Information' as const, data: 'next', taskId: 'task-1', agentSeq: 3 }]),
    ).toHaveLength(1);
    const after = await t.deps.store.deployments.get(deploymentId);
    expect(after!.errorCount - before!.errorCount).toBe(1);
    expect(after!.warningCount - before!.warningCount).toBe(1);
    const stored = await t.db('deployment_logs').where({ task_id: 'task-1' }).orderBy('agent_seq');
    expect(stored.map((r) => r.data)).toEqual(['careful', 'broken', 'next']);
    expect(after!.lastLogTick).toBe(BigInt(stored[2].tick));
  });

  it('stores a batch sent twice at the same moment (two replicas) once', async () => {
    const batch = Array.from({ length: 10 }, (_, i) => ({
      level: 'Information' as const,
      data: `dup ${i}`,
      taskId: 'task-2',
      agentSeq: i + 1,
    }));
    const results = await Promise.all([append(batch), append(batch), append(batch)]);
    expect(results.reduce((n, r) => n + r.length, 0)).toBe(10);
    const stored = await t.db('deployment_logs').where({ task_id: 'task-2' }).orderBy('tick');
    expect(stored.map((r) => r.agent_seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  });

  it('keeps ticks increasing with the agent clock behind the server clock', async () => {
    const past = new Date(Date.now() - 60_000);
    const stored = await append([
      { level: 'Information', data: 'late 1', createdUtc: past },
      { level: 'Information', data: 'late 2', createdUtc: past },
    ]);
    const before = await t.deps.store.deploymentLogs.read(deploymentId, null, 1000);
    const previous = before.filter((e) => !e.data.startsWith('late')).at(-1)!.tick;
    expect(stored[0]!.tick).toBe(previous + 1n);
    expect(stored[1]!.tick).toBe(previous + 2n);
  });

  it('stores an entry with a given id once, whether it repeats within a batch or was stored before', async () => {
    const parent = `${deploymentId}.step-x`;
    const first = await append([
      { id: parent, level: 'Information', data: "Step 'X'" },
      { level: 'Information', data: 'child 1', parentLogId: parent },
      { id: parent, level: 'Information', data: "Step 'X'" },
      { level: 'Information', data: 'child 2', parentLogId: parent },
    ]);
    expect(first.map((e) => e.data)).toEqual(["Step 'X'", 'child 1', 'child 2']);
    const again = await append([
      { id: parent, level: 'Information', data: "Step 'X'" },
      { level: 'Information', data: 'child 3', parentLogId: parent },
    ]);
    expect(again.map((e) => e.data)).toEqual(['child 3']);
    expect(await t.db('deployment_logs').where({ id: parent }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('ends a running task and stores its line in one statement, once; a task that is not Running stores nothing', async () => {
    const taskId = newId();
    await t.deps.store.deploymentTasks.insertMany([
      { id: taskId, deploymentId, stageIndex: 0, stepId: 'step-f', stepName: 'F', machineId: null, machineName: null },
    ]);
    const finish = async () =>
      (
        await t.deps.store.deploymentLogs.record(
          deploymentId,
          [{ level: 'Information', data: `output of ${taskId}`, taskId, agentSeq: 1 }],
          [
            {
              taskId,
              status: 'Failed',
              exitCode: 3,
              message: 'failed with exit code 3',
              finishedUtc: new Date(),
              line: { level: 'Error', data: `F finished ${taskId}` },
            },
          ],
          new Date(),
        )
      ).finished;
    expect(await finish()).toEqual(new Set()); // still Pending: the end is refused, the output line is kept
    expect(await t.deps.store.deploymentTasks.startMany([taskId], new Date())).toEqual([taskId]);
    const before = await t.deps.store.deployments.get(deploymentId);
    expect(await finish()).toEqual(new Set([taskId]));
    expect(await finish()).toEqual(new Set());
    const task = await t.deps.store.deploymentTasks.get(taskId);
    expect(task).toMatchObject({
      status: 'Failed',
      exitCode: 3,
      message: 'failed with exit code 3',
      parentLogId: taskId,
    });
    expect(
      await t
        .db('deployment_logs')
        .where({ data: `F finished ${taskId}` })
        .count({ n: '*' }),
    ).toEqual([{ n: '1' }]);
    expect(
      await t
        .db('deployment_logs')
        .where({ data: `output of ${taskId}` })
        .count({ n: '*' }),
    ).toEqual([{ n: '1' }]);
    expect((await t.deps.store.deployments.get(deploymentId))!.errorCount).toBe(before!.errorCount + 1);
  });

  it('stores a line holding U+0000 (PostgreSQL text cannot) with a replacement character', async () => {
    const [stored] = await append([{ level: 'Information', data: 'before\u0000after' }]);
    expect(stored!.data).toBe('before\uFFFDafter');
  });
});
