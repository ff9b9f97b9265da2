/**
 * bench/fleet/record-statement: the statement that records a deployment's progress
 * (store/deployment-logs.ts, record) at the width of a fleet. One statement starts W tasks with a
 * line each (what a window of W does at once, or a deployment to W machines with no window), one
 * ends them with a line each (what a burst of results does); each runs on a fresh deployment of
 * W tasks, on the real PostgreSQL (a fresh database). Work that grows with W² shows as time per
 * task growing with W.
 *
 *   npx tsx bench/fleet/record-statement.ts                    (W = 500, 2000, 10000; 3 runs each)
 *   npx tsx bench/fleet/record-statement.ts --w 2000 --runs 5
 */
import { newId } from '../../services/core/index.ts';
import { createDb, createStore, type TaskFinish } from '../../services/store/index.ts';
import { api, bashProject, cleanup, startControlPlane, workspaceOf } from '../../test/e2e/harness.ts';
import { manualDeployment } from '../../test/helpers/deployment-row.ts';
import { median, table } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const WIDTHS = (option('--w') ?? '500,2000,10000').split(',').map(Number);
const RUNS = Number(option('--runs') ?? 3);

async function main(): Promise<void> {
  const database = await freshDatabase('gantry_bench_record');
  // The control plane migrates the database and makes the workspace, project and release.
  const plane = await startControlPlane({ databaseUrl: database.url, env: { GANTRY_METRICS_PORT: 'off' } });
  const db = createDb(database.url, { poolMax: 2 });
  try {
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    const { projectId } = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
      { name: 'Deploy', script: 'true' },
    ]);
    const release = await client.post('/api/release', { projectId, version: '1.0.0' });
    if (release.status !== 200) throw new Error(`POST /api/release: ${release.status} ${release.text}`);
    const releaseId = release.body.releaseId as string;
    const environmentId = workspace.environments.Staging!;
    const store = createStore(db);
    const rows: string[][] = [];
    for (const width of WIDTHS) {
      const startMs: number[] = [];
      const endMs: number[] = [];
      // One run more than reported: the first prepares the statement on its connection.
      for (let run = 0; run <= RUNS; run++) {
        const deploymentId = newId();
        await store.deployments.insert([
          manualDeployment({
            id: deploymentId,
            workspaceId: workspace.workspaceId,
            projectId,
            releaseId,
            environmentId,
            environmentName: 'Staging',
          }),
        ]);
        const ids = Array.from({ length: width }, () => newId());
        await store.deploymentTasks.insertManyCounted(
          ids.map((id, i) => ({
            id,
            deploymentId,
            stageIndex: 0,
            stepId: 'step-deploy',
            stepName: 'Deploy',
            machineId: null,
            machineName: `m${i}`,
          })),
        );
        const lines = ids.map((id, i) => ({
          entry: { level: 'Information' as const, data: `Running 'Deploy' on m${i}`, taskId: id, parentLogId: id },
          when: [id],
        }));
        let at = performance.now();
        const started = await store.deploymentLogs.record(
          deploymentId,
          [{ starts: { taskIds: ids, lines } }],
          new Date(),
        );
        const startTook = performance.now() - at;
        if (started.started.size !== width || started.stored.length !== width)
          throw new Error(`started ${started.started.size} tasks with ${started.stored.length} lines, not ${width}`);
        const finishes: TaskFinish[] = ids.map((id, i) => ({
          taskId: id,
          status: 'Succeeded',
          exitCode: 0,
          message: '',
          finishedUtc: new Date(),
          line: { level: 'Information', data: `Deploy on m${i}: Succeeded`, taskId: id, parentLogId: id },
          lastLogSeq: null,
        }));
        at = performance.now();
        const ended = await store.deploymentLogs.record(deploymentId, [{ finishes }], new Date());
        const endTook = performance.now() - at;
        if (ended.finished.size !== width || ended.stored.length !== width)
          throw new Error(`ended ${ended.finished.size} tasks with ${ended.stored.length} lines, not ${width}`);
        if (run === 0) continue;
        startMs.push(startTook);
        endMs.push(endTook);
      }
      const perTask = (ms: number) => `${((ms * 1000) / width).toFixed(1)} µs`;
      rows.push([
        String(width),
        `${median(startMs).toFixed(1)} ms`,
        perTask(median(startMs)),
        `${median(endMs).toFixed(1)} ms`,
        perTask(median(endMs)),
      ]);
    }
    console.log(`\nbench/fleet/record-statement: one statement per width W, median of ${RUNS} runs\n`);
    console.log(table(['W', 'W starts with their lines', 'per task', 'W ends with their lines', 'per task'], rows));
  } finally {
    await db.destroy();
    await cleanup();
    await database.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
