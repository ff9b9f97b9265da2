/**
 * The log retention policy (GANTRY_LOG_RETENTION_DAYS, engine/log-retention.ts): a finished
 * deployment's log past retention is removed, entries and agents' chunks alike, one line saying so
 * in its place; the deployment, its status and counts stay; newer or unfinished deployments keep
 * theirs; a second sweep removes nothing more. The real PostgreSQL.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config.ts';
import { removeExpiredLogs } from '../../../services/engine/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { agentChunk, runningAgentTask } from '../../helpers/log-chunk.ts';

let t: TestContext;
let projectId: string;
let version = 0;
const DAY_MS = 24 * 60 * 60 * 1000;

beforeAll(async () => {
  t = await testApp();
  const lifecycleId = (await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId })).body.lifecycles[0]
    .lifecycleId;
  projectId = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Kept', lifecycleId })).body
    .projectId;
});

/** A deployment to Staging with engine lines (a warning among them) and an agent's chunk of lines. */
async function deploymentWithLog(): Promise<string> {
  const release = await t.admin.post('/api/release', { projectId, version: `1.0.${++version}` });
  const deployed = await t.admin.post('/api/release/deploy', {
    releaseId: release.body.releaseId,
    environments: ['Staging'],
  });
  const id: string = deployed.body.deploymentIds[0];
  const logs = t.deps.store.deploymentLogs;
  await logs.append(
    id,
    [
      { level: 'Information', data: 'Step one' },
      { level: 'Warning', data: 'a warning' },
    ],
    new Date(),
  );
  const taskId = await runningAgentTask(t.deps.store, id);
  await logs.record(id, [{ chunks: [agentChunk(taskId, 1, ['printed 1', 'printed 2', 'printed 3'])] }], new Date());
  return id;
}

const finishedDaysAgo = (id: string, days: number | null) =>
  t.deps.store.deployments.update(
    id,
    days === null ? { status: 'Running' } : { status: 'Completed', completedUtc: new Date(Date.now() - days * DAY_MS) },
    new Date(),
  );

const linesOf = async (id: string) => (await t.deps.store.deploymentLogs.read(id, null, 1_000)).map((l) => l.data);

describe('log retention', () => {
  it('removes the logs of deployments finished before the cutoff, keeping the deployment and a line saying so', async () => {
    const [old, recent, unfinished] = [await deploymentWithLog(), await deploymentWithLog(), await deploymentWithLog()];
    await finishedDaysAgo(old, 40);
    await finishedDaysAgo(recent, 10);
    await finishedDaysAgo(unfinished, null);
    const before = (await t.admin.get('/api/deployment', { deploymentId: old })).body;
    expect(before.logs.length).toBe(5);
    const recentLines = await linesOf(recent);

    const told: string[] = [];
    const removed = await removeExpiredLogs({
      store: t.deps.store,
      clock: { now: () => new Date() },
      days: 30,
      onRemoved: (id) => told.push(id),
    });
    expect(removed.deployments).toBe(1);
    // What the server publishes (a log change: followers, and every replica's read cache, forget it).
    expect(told).toEqual([old]);
    await t.deps.forgetCachedReads?.();
    // The engine's two lines and the chunk's three.
    expect(removed.lines).toBe(before.logs.length);

    const after = (await t.admin.get('/api/deployment', { deploymentId: old })).body;
    expect(after.logs.map((l: { Data: string }) => l.Data)).toEqual([
      "This deployment's log was removed 30 days after it finished (GANTRY_LOG_RETENTION_DAYS); its status, counts and tasks are kept",
    ]);
    expect(after.status).toMatchObject({ Status: 'Completed', WarningCount: before.status.WarningCount });
    expect(before.status.WarningCount).toBe(1);
    expect(await t.db('deployment_log_chunks').where({ deployment_id: old }).count('* as n')).toEqual([{ n: '0' }]);
    expect(await t.db('deployment_tasks').where({ deployment_id: old }).count('* as n')).toEqual([{ n: '1' }]);
    expect(await linesOf(recent)).toEqual(recentLines);
    expect(await linesOf(unfinished)).toContain('printed 3');

    // Done once: a second sweep finds nothing; ten days later the recent one goes too.
    expect(await removeExpiredLogs({ store: t.deps.store, clock: { now: () => new Date() }, days: 30 })).toEqual({
      deployments: 0,
      lines: 0,
    });
    const later = { now: () => new Date(Date.now() + 21 * DAY_MS) };
    expect((await removeExpiredLogs({ store: t.deps.store, clock: later, days: 30 })).deployments).toBe(1);
    expect(await linesOf(recent)).toHaveLength(1);
    expect(await linesOf(unfinished)).toContain('printed 3');
  });

  it('is off unless GANTRY_LOG_RETENTION_DAYS is set, and refuses a number of days that is not whole and positive', () => {
    expect(loadConfig({}).logRetentionDays).toBeNull();
    expect(loadConfig({ GANTRY_LOG_RETENTION_DAYS: '90' }).logRetentionDays).toBe(90);
    for (const bad of ['0', '-1', '1.5', 'ninety'])
      expect(() => loadConfig({ GANTRY_LOG_RETENTION_DAYS: bad }), bad).toThrow(/GANTRY_LOG_RETENTION_DAYS/);
  });
});
