/** The per-deployment coalescing of agent reports, against the real PostgreSQL. */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { ProgressWriter } from '../../../services/engine/progress-writer.ts';
import type { Store, TaskFinish } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { agentChunk } from '../../helpers/log-chunk.ts';
import { deployment, environmentId, release, step } from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let deploymentId: string;
let statements: number;
let counted: Store;

beforeAll(async () => {
  t = await testApp();
  const staging = await environmentId(t, 'Staging');
  deploymentId = await deployment(t, await release(t, { steps: [step('Report')] }), staging);
  // The real store, with its statements counted.
  const real = t.deps.store;
  counted = {
    ...real,
    deploymentLogs: {
      ...real.deploymentLogs,
      record: (...args: Parameters<Store['deploymentLogs']['record']>) => {
        statements++;
        return real.deploymentLogs.record(...args);
      },
    },
  };
});

async function runningTasks(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => newId());
  await t.deps.store.deploymentTasks.insertManyCounted(
    ids.map((id, i) => ({
      id,
      deploymentId,
      stageIndex: 0,
      stepId: `step-${id}`,
      stepName: 'Report',
      machineId: null,
      machineName: `m-${i}`,
    })),
  );
  await t.deps.store.deploymentLogs.record(deploymentId, [{ starts: { taskIds: ids, lines: [] } }], new Date());
  return ids;
}

/** Lines 1.. of a task as its agent's chunk. */
const chunk = (taskId: string, lines: string[], firstSeq = 1) => agentChunk(taskId, firstSeq, lines, { stepId: null });

function end(
  taskId: string,
  data: string,
  status: TaskFinish['status'] = 'Succeeded',
  lastLogSeq: number | null = null,
): TaskFinish {
  return {
    taskId,
    status,
    exitCode: status === 'Succeeded' ? 0 : 1,
    message: 'done',
    finishedUtc: new Date(),
    line: { level: 'Information', data, taskId },
    lastLogSeq,
  };
}

/** What a reader sees of the task: its lines (chunks) and entries, in tick order. */
async function linesOfTask(taskId: string): Promise<string[]> {
  const all = await t.deps.store.deploymentLogs.read(deploymentId, null, 100_000);
  return all.filter((entry) => entry.taskId === taskId).map((entry) => entry.data);
}

describe('ProgressWriter', () => {
  it('stores fifty concurrent reports of one deployment in far fewer statements, each caller told when its own are stored', async () => {
    statements = 0;
    const writer = new ProgressWriter({ store: counted, clock: t.deps.clock });
    const tasks = await runningTasks(50);
    const results = await Promise.all(
      tasks.flatMap((taskId, i) => [
        writer.write(deploymentId, [], [], [chunk(taskId, [`line of ${taskId}`])]),
        writer.write(deploymentId, [], [end(taskId, `end of ${taskId}`, i === 0 ? 'Failed' : 'Succeeded', 1)]),
      ]),
    );
    // A task's end waits for its lines' statement, but fifty tasks share each statement.
    expect(statements).toBeLessThan(10);
    // Chunk writes finish no task; each end reports exactly its own task.
    expect(results.filter((_, i) => i % 2 === 0).map((r) => [...r.storedChunks])).toEqual(tasks.map((id) => [id]));
    expect(results.filter((_, i) => i % 2 === 1).map((r) => [...r.finished])).toEqual(tasks.map((id) => [id]));
    for (const taskId of tasks) {
      // In the order each agent sent them: the line, then the end.
      expect(await linesOfTask(taskId)).toEqual([`line of ${taskId}`, `end of ${taskId}`]);
    }
    const rows = await t.db('deployment_tasks').whereIn('id', tasks);
    expect(rows.every((row) => row.status === (row.id === tasks[0] ? 'Failed' : 'Succeeded'))).toBe(true);
  });

  it('writes the reports taken in one turn in one statement, in the order they were taken', async () => {
    statements = 0;
    const writer = new ProgressWriter({ store: counted, clock: t.deps.clock });
    const [a, b] = await runningTasks(2);
    const [first, second] = await Promise.all([
      writer.write(deploymentId, [], [], [chunk(a!, [`last ${a}`])]),
      writer.write(deploymentId, [], [end(b!, `ended ${b}`)]),
    ]);
    expect(statements).toBe(1);
    expect([...first.storedChunks, ...second.finished]).toEqual([a, b]);
    const all = await t.deps.store.deploymentLogs.read(deploymentId, null, 100_000);
    expect(all.filter((e) => e.taskId === a || e.taskId === b).map((e) => e.data)).toEqual([`last ${a}`, `ended ${b}`]);
  });

  it("holds a task's end until the lines it covers are stored", async () => {
    const writer = new ProgressWriter({ store: t.deps.store, clock: t.deps.clock });
    const [taskId] = await runningTasks(1);
    const early = await writer.write(deploymentId, [], [end(taskId!, `too early ${taskId}`, 'Succeeded', 2)]);
    expect(early.finished.size).toBe(0);
    await writer.write(deploymentId, [], [], [chunk(taskId!, ['one', 'two'])]);
    const later = await writer.write(deploymentId, [], [end(taskId!, `in time ${taskId}`, 'Succeeded', 2)]);
    expect([...later.finished]).toEqual([taskId]);
    expect(await linesOfTask(taskId!)).toEqual(['one', 'two', `in time ${taskId}`]);
  });

  it('ends a task once: a repeated end reports nothing finished and stores no second line', async () => {
    const writer = new ProgressWriter({ store: t.deps.store, clock: t.deps.clock });
    const [taskId] = await runningTasks(1);
    const once = () => writer.write(deploymentId, [], [end(taskId!, `once ${taskId}`)]);
    const [first, second] = await Promise.all([once(), once()]);
    expect([...first.finished, ...second.finished]).toEqual([taskId]);
    expect(
      await t
        .db('deployment_logs')
        .where({ data: `once ${taskId}` })
        .count({ n: '*' }),
    ).toEqual([{ n: '1' }]);
  });

  it('counts only the first of two ends of one task sharing a statement (a re-sent result)', async () => {
    const writer = new ProgressWriter({ store: t.deps.store, clock: t.deps.clock });
    const [x, y] = await runningTasks(2);
    const ending = (taskId: string, data: string) => writer.write(deploymentId, [], [end(taskId, data)]);
    // x may go out alone; the two ends of y then share the next statement.
    const [ofX, firstOfY, secondOfY] = await Promise.all([
      ending(x!, `x ${x}`),
      ending(y!, `y ${y}`),
      ending(y!, `y again ${y}`),
    ]);
    expect([[...ofX.finished], [...firstOfY.finished], [...secondOfY.finished]]).toEqual([[x], [y], []]);
    expect((await t.db('deployment_logs').where({ task_id: y }).select('data')).map((row) => row.data)).toEqual([
      `y ${y}`,
    ]);
  });

  it('fails only the report that cannot be stored, not the others sharing its statement', async () => {
    const writer = new ProgressWriter({ store: t.deps.store, clock: t.deps.clock });
    const [a, b] = await runningTasks(2);
    const outcomes = await Promise.allSettled([
      writer.write(deploymentId, [{ level: 'Information', data: `first ${a}`, taskId: a! }]),
      writer.write(deploymentId, [{ level: 'Information', data: 'unstorable', createdUtc: new Date(Number.NaN) }]),
      writer.write(deploymentId, [{ level: 'Information', data: `third ${b}`, taskId: b! }]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(
      await t
        .db('deployment_logs')
        .whereIn('data', [`first ${a}`, `third ${b}`])
        .count({ n: '*' }),
    ).toEqual([{ n: '2' }]);
  });
});
