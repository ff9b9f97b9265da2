/**
 * The statements that record a running deployment's progress find its tasks by their IDs, however
 * PostgreSQL estimates a deployment's size. Its estimate of `deployment_id = $1` in a named
 * statement's plan (a generic plan, made once) comes from the average deployment, or from
 * statistics taken while the table was small. Planned on that, a big deployment's tasks were read
 * through the (deployment_id, …) index, or the whole table scanned, to find the few a statement
 * records: every task of the deployment once per statement, work that grows with N² over a
 * deployment (bench/README, eighteenth session).
 *
 * Here the statistics say deployments are small (100,000 of them) and one has 3,000 tasks. Each
 * statement a refill runs is captured as the server sends it and planned as a generic plan; its
 * plan must reach deployment_tasks by the primary key only, and deployment_logs by its key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { deployment, environmentId, everywhereTasks, fleetOf, release, step } from '../../helpers/engine-fixtures.ts';

const TASKS = 3_000;
let t: TestContext;
let deploymentId: string;
let taskIds: string[];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/**
 * How a plan reads `relation`: `Seq Scan`, or the index of each index or bitmap scan (a write of
 * the table's rows, ModifyTable, reads nothing by itself).
 */
function reads(node: PlanNode, relation: string, found: string[] = []): string[] {
  if (node['Relation Name'] === relation) {
    if (node['Node Type'] === 'Seq Scan') found.push('Seq Scan');
    if (node['Node Type'] === 'Index Scan' || node['Node Type'] === 'Index Only Scan') found.push(node['Index Name']!);
    if (node['Node Type'] === 'Bitmap Heap Scan') found.push(...bitmapIndexes(node));
  }
  for (const child of node.Plans ?? []) reads(child, relation, found);
  return found;
}

/** The indexes a bitmap heap scan's bitmap is made of (its Bitmap Index Scans, under any And/Or). */
function bitmapIndexes(node: PlanNode): string[] {
  return (node.Plans ?? []).flatMap((child) =>
    child['Node Type'] === 'Bitmap Index Scan' ? [child['Index Name']!] : bitmapIndexes(child),
  );
}

/** Statements sent while `run` runs, as sent (numbered parameters and their values). */
async function captured(run: () => Promise<unknown>): Promise<Array<{ sql: string; bindings: unknown[] }>> {
  const seen: Array<{ sql: string; bindings: unknown[] }> = [];
  const listener = (query: { sql: string; bindings?: unknown[] }) =>
    seen.push({ sql: query.sql, bindings: query.bindings ?? [] });
  t.db.on('query', listener);
  try {
    await run();
  } finally {
    t.db.off('query', listener);
  }
  return seen;
}

/** The generic plan of a statement with these parameter values (as the server's named statements are planned). */
async function genericPlan(client: pg.Client, sql: string, bindings: unknown[]): Promise<PlanNode> {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'NULL';
    if (value instanceof Date) return client.escapeLiteral(value.toISOString());
    if (Array.isArray(value))
      return client.escapeLiteral(
        `{${value.map((v: string | null) => (v === null ? 'NULL' : JSON.stringify(v))).join(',')}}`,
      );
    switch (typeof value) {
      case 'string':
        return client.escapeLiteral(value);
      case 'number':
      case 'bigint':
      case 'boolean':
        return client.escapeLiteral(value.toString());
      default:
        return client.escapeLiteral(JSON.stringify(value));
    }
  };
  await client.query('DEALLOCATE ALL');
  await client.query(`PREPARE statement_under_test AS ${sql}`);
  const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
    `EXPLAIN (FORMAT JSON) EXECUTE statement_under_test(${bindings.map(literal).join(', ')})`,
  );
  return rows[0]!['QUERY PLAN'][0]!.Plan;
}

beforeAll(async () => {
  t = await testApp();
  const staging = await environmentId(t, 'Staging');
  const machineIds = await fleetOf(t, TASKS, staging);
  deploymentId = await deployment(t, await release(t, { steps: [step('Everywhere')] }), staging);
  const tasks = everywhereTasks(deploymentId, machineIds);
  await t.deps.store.deploymentTasks.insertManyCounted(tasks);
  taskIds = tasks.map((task) => task.id);
  const lines = tasks.map((task) => ({
    entry: {
      id: `start-${task.id}`,
      level: 'Information' as const,
      data: `Running on ${task.machineName}`,
      taskId: task.id,
    },
    when: [task.id],
  }));
  await t.deps.store.deploymentLogs.record(deploymentId, [{ starts: { taskIds, lines } }], new Date());
  // What an installation with many small deployments tells the planner.
  await t.db.raw('alter table deployment_tasks alter column deployment_id set (n_distinct = 100000)');
  await t.db.raw('analyze deployment_tasks, deployment_logs');
}, 120_000);

afterAll(async () => {
  await t?.db.raw('alter table deployment_tasks alter column deployment_id reset (n_distinct)');
});

describe('a refill of a 3,000-task deployment, planned on statistics that say deployments are small', () => {
  it('reads deployment_tasks by primary key only and deployment_logs by key', async () => {
    const { deploymentLogs, deployments, deploymentTasks } = t.deps.store;
    const ending = taskIds.slice(100, 105);
    const now = new Date();
    const statements = await captured(async () => {
      // Five results with their lines, and two lines of output from another task, as agents send them.
      await deploymentLogs.record(
        deploymentId,
        [
          {
            finishes: ending.map((taskId) => ({
              taskId,
              status: 'Succeeded' as const,
              exitCode: 0,
              message: '',
              finishedUtc: now,
              line: { id: `end-${taskId}`, level: 'Information' as const, data: 'Succeeded', taskId },
              lastLogSeq: null,
            })),
            chunks: [
              {
                taskId: taskIds[200]!,
                stepId: null,
                parentLogId: taskIds[200]!,
                firstSeq: 1,
                lineCount: 2,
                firstTick: 0n,
                tickSteps: null,
                spanTicks: 1n,
                levels: null,
                warnings: 0,
                data: 'one\ntwo\n',
              },
            ],
          },
        ],
        now,
      );
      // The advance that follows: its claim reads what ended among the tasks it knew as running.
      await deployments.claim(deploymentId, 'replica-under-test', now, new Date(now.getTime() + 30_000), ending);
      await deploymentTasks.listEnded(deploymentId, ending);
    });
    const touching = statements.filter((s) => /deployment_tasks/.test(s.sql));
    expect(touching.length).toBeGreaterThanOrEqual(3);
    // A connection of the app's own pool, set to plan every statement as a named statement's generic plan.
    const client = (await t.db.client.acquireConnection()) as pg.Client;
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      for (const statement of touching) {
        const plan = await genericPlan(client, statement.sql, statement.bindings);
        const taskReads = reads(plan, 'deployment_tasks');
        expect(taskReads.length, statement.sql).toBeGreaterThan(0);
        expect(new Set(taskReads), statement.sql).toEqual(new Set(['deployment_tasks_pkey']));
        expect(reads(plan, 'deployment_logs'), statement.sql).not.toContain('Seq Scan');
      }
    } finally {
      await client.query('DEALLOCATE ALL');
      await client.query('RESET plan_cache_mode');
      await t.db.client.releaseConnection(client);
    }
  }, 60_000);
});
