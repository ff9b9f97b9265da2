/** The per-deployment coalescing of agent reports, against the real PostgreSQL. */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { ProgressWriter } from '../../../services/engine/progress-writer.ts';
import type { Store } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
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
  await t.deps.store.deploymentTasks.insertMany(
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
  await t.deps.store.deploymentTasks.startMany(ids, new Date());
  return ids;
}

describe('ProgressWriter', () => {
  it('stores fifty concurrent reports of one deployment in far fewer statements, each caller told when its own are stored', async () => {
    statements = 0;
    const writer = new ProgressWriter({ store: counted, clock: t.deps.clock });
    const tasks = await runningTasks(50);
    const results = await Promise.all(
      tasks.flatMap((taskId, i) => [
        writer.write(deploymentId, [{ level: 'Information', data: `line of ${taskId}`, taskId, agentSeq: 1 }]),
        writer.write(
          deploymentId,
          [],
          [
            {
              taskId,
              status: i === 0 ? 'Failed' : 'Succeeded',
              exitCode: i === 0 ? 1 : 0,
              message: 'done',
              finishedUtc: new Date(),
              line: { level: 'Information', data: `end of ${taskId}`, taskId },
            },
          ],
        ),
      ]),
    );
    expect(statements).toBeLessThan(20);
    // Log writes finish no task; each end reports exactly its own task.
    expect(results.filter((_, i) => i % 2 === 0).every((finished) => finished.size === 0)).toBe(true);
    expect(results.filter((_, i) => i % 2 === 1).map((finished) => [...finished])).toEqual(tasks.map((id) => [id]));
    const stored = await t
      .db('deployment_logs')
      .where({ deployment_id: deploymentId })
      .whereIn('task_id', tasks)
      .orderBy('tick');
    expect(stored).toHaveLength(100);
    for (const taskId of tasks) {
      const own = stored.filter((row) => row.task_id === taskId).map((row) => row.data);
      expect(own).toEqual([`line of ${taskId}`, `end of ${taskId}`]); // in the order each agent sent them
    }
    const rows = await t.db('deployment_tasks').whereIn('id', tasks);
    expect(rows.every((row) => row.status === (row.id === tasks[0] ? 'Failed' : 'Succeeded'))).toBe(true);
  });

  it('writes the reports taken in one turn in one statement, in the order they were taken', async () => {
    statements = 0;
    const writer = new ProgressWriter({ store: counted, clock: t.deps.clock });
    const [taskId] = await runningTasks(1);
    const lines = writer.write(deploymentId, [
      { level: 'Information', data: `last ${taskId}`, taskId: taskId!, agentSeq: 1 },
    ]);
    const end = writer.write(
      deploymentId,
      [],
      [
        {
          taskId: taskId!,
          status: 'Succeeded',
          exitCode: 0,
          message: 'done',
          finishedUtc: new Date(),
          line: { level: 'Information', data: `ended ${taskId}`, taskId: taskId! },
        },
      ],
    );
    const [, finished] = await Promise.all([lines, end]);
    expect(statements).toBe(1);
    expect([...finished]).toEqual([taskId]);
    const stored = await t.db('deployment_logs').where({ task_id: taskId }).orderBy('tick');
    expect(stored.map((row) => row.data)).toEqual([`last ${taskId}`, `ended ${taskId}`]);
  });

  it('ends a task once: a repeated end reports nothing finished and stores no second line', async () => {
    const writer = new ProgressWriter({ store: t.deps.store, clock: t.deps.clock });
    const [taskId] = await runningTasks(1);
    const end = () =>
      writer.write(
        deploymentId,
        [],
        [
          {
            taskId: taskId!,
            status: 'Succeeded',
            exitCode: 0,
            message: 'done',
            finishedUtc: new Date(),
            line: { level: 'Information', data: `once ${taskId}`, taskId: taskId! },
          },
        ],
      );
    const [first, second] = await Promise.all([end(), end()]);
    expect([...first, ...second]).toEqual([taskId]);
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
    const end = (taskId: string, data: string) =>
      writer.write(
        deploymentId,
        [],
        [
          {
            taskId,
            status: 'Succeeded',
            exitCode: 0,
            message: 'done',
            finishedUtc: new Date(),
            line: { level: 'Information', data, taskId },
          },
        ],
      );
    // x may go out alone; the two ends of y then share the next statement.
    const [ofX, firstOfY, secondOfY] = await Promise.all([
      end(x!, `x ${x}`),
      end(y!, `y ${y}`),
      end(y!, `y again ${y}`),
    ]);
    expect([[...ofX], [...firstOfY], [...secondOfY]]).toEqual([[x], [y], []]);
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
