import { beforeAll, describe, expect, it } from 'vitest';
import { dateToTicks, newId, ticksToDate } from '../../../services/core/index.ts';
import type { LogLevelFloor } from '../../../services/core/index.ts';
import type { LogReport, TaskFinish } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { agentChunk } from '../../helpers/log-chunk.ts';
import { tryRowLock } from '../../helpers/row-locks.ts';
import { manualDeployment } from '../../helpers/deployment-row.ts';

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
    manualDeployment({
      id: deploymentId,
      workspaceId: t.mainWorkspaceId,
      projectId: project.body.projectId,
      releaseId,
      environmentId: environment.id,
      environmentName: environment.name,
    }),
  ]);
});

const append = (entries: Parameters<TestContext['deps']['store']['deploymentLogs']['append']>[1], now = new Date()) =>
  t.deps.store.deploymentLogs.append(deploymentId, entries, now);
const record = (reports: LogReport[]) => t.deps.store.deploymentLogs.record(deploymentId, reports, new Date());
const start = async (taskIds: string[]) => (await record([{ starts: { taskIds, lines: [] } }])).started;
/** What the entries a record answered hold, as stored, in tick order. */
const textOf = async (stored: ReadonlyArray<{ id: string }>) =>
  (
    await t
      .db('deployment_logs')
      .whereIn(
        'id',
        stored.map((e) => e.id),
      )
      .orderBy('tick')
      .select('data')
  ).map((row: { data: string }) => row.data);
const readAll = () => t.deps.store.deploymentLogs.read(deploymentId, null, 100_000, 1024 ** 3);

async function runningTask(): Promise<string> {
  const taskId = newId();
  await t.deps.store.deploymentTasks.insertManyCounted([
    { id: taskId, deploymentId, stageIndex: 0, stepId: 'step-x', stepName: 'X', machineId: null, machineName: null },
  ]);
  await start([taskId]);
  return taskId;
}

/** Lines of a task's agent from `firstSeq`, printed now (or at `printed`), one tick apart. */
const chunk = (taskId: string, firstSeq: number, lines: string[], levels: Buffer | null = null, printed = new Date()) =>
  agentChunk(taskId, firstSeq, lines, { levels, printed });

function finish(
  taskId: string,
  lastLogSeq: number | null,
  status: TaskFinish['status'] = 'Succeeded',
  data = `end of ${taskId}`,
): TaskFinish {
  return {
    taskId,
    status,
    exitCode: status === 'Failed' ? 1 : 0,
    message: 'done',
    finishedUtc: new Date(),
    line: { level: status === 'Failed' ? 'Error' : 'Information', data, taskId },
    lastLogSeq,
  };
}

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

  it("stores a task's chunk once, only after the lines stored before it, and counts its warnings once", async () => {
    const taskId = await runningTask();
    const before = await t.deps.store.deployments.get(deploymentId);
    const first = chunk(taskId, 1, ['careful', 'fine'], Buffer.from([1, 0]));
    expect((await record([{ chunks: [first] }])).storedChunks).toEqual(new Set([taskId]));
    // Sent again (a reconnect): refused, saying what is stored.
    const again = await record([{ chunks: [first] }]);
    expect(again.storedChunks.size).toBe(0);
    expect(again.refusedChunks.get(taskId)).toEqual({ lastLogSeq: 2, running: true });
    expect((await record([{ chunks: [chunk(taskId, 3, ['next'])] }])).storedChunks).toEqual(new Set([taskId]));
    const after = await t.deps.store.deployments.get(deploymentId);
    expect(after!.warningCount - before!.warningCount).toBe(1);
    const lines = (await readAll()).filter((e) => e.taskId === taskId);
    expect(lines.map((e) => [e.id, e.data, e.level])).toEqual([
      [`${taskId}.1`, 'careful', 'Warning'],
      [`${taskId}.2`, 'fine', 'Information'],
      [`${taskId}.3`, 'next', 'Information'],
    ]);
    expect(after!.lastLogTick).toBe(lines.at(-1)!.tick);
  });

  it('stores a chunk sent twice at the same moment (two replicas) once', async () => {
    const taskId = await runningTask();
    const same = chunk(
      taskId,
      1,
      Array.from({ length: 10 }, (_, i) => `dup ${i}`),
    );
    const results = await Promise.all([1, 2, 3].map(() => record([{ chunks: [same] }])));
    expect(results.filter((r) => r.storedChunks.has(taskId))).toHaveLength(1);
    expect((await readAll()).filter((e) => e.taskId === taskId).map((e) => e.data)).toEqual(
      Array.from({ length: 10 }, (_, i) => `dup ${i}`),
    );
  });

  it('refuses lines of a task that has ended: a final deployment never changes', async () => {
    const taskId = await runningTask();
    await record([{ chunks: [chunk(taskId, 1, ['in time'])] }]);
    await record([{ finishes: [finish(taskId, 1)] }]);
    const before = await t.deps.store.deployments.get(deploymentId);
    const late = await record([{ chunks: [chunk(taskId, 2, ['too late', 'and more'], Buffer.from([1, 1]))] }]);
    expect(late.refusedChunks.get(taskId)).toEqual({ lastLogSeq: 1, running: false });
    const after = await t.deps.store.deployments.get(deploymentId);
    expect(after!.warningCount).toBe(before!.warningCount);
    expect(after!.lastLogTick).toBe(before!.lastLogTick);
    expect((await readAll()).some((e) => e.data === 'too late')).toBe(false);
  });

  it("gives a chunk's lines their own times as ticks when the order allows, and ticks after the last otherwise", async () => {
    const taskId = await runningTask();
    const at = new Date(Date.now() + 1_000);
    const steps = Buffer.from([0x90, 0x4e, 0x90, 0x4e]); // 10,000 ticks (1 ms) each
    await record([
      {
        chunks: [
          { ...chunk(taskId, 1, ['a', 'b', 'c']), firstTick: dateToTicks(at), tickSteps: steps, spanTicks: 20_000n },
        ],
      },
    ]);
    const lines = (await readAll()).filter((e) => e.taskId === taskId);
    expect(lines.map((e) => e.tick - dateToTicks(at))).toEqual([0n, 10_000n, 20_000n]);
    expect(lines.map((e) => e.createdUtc.getTime() - at.getTime())).toEqual([0, 1, 2]);
    // Printed earlier than what is stored already: after it, one tick apart, and its time says so.
    const late = await runningTask();
    await record([{ chunks: [chunk(late, 1, ['x', 'y'], null, new Date(0))] }]);
    const [x, y] = (await readAll()).filter((e) => e.taskId === late);
    expect(x!.tick).toBe(lines.at(-1)!.tick + 1n);
    expect(y!.tick).toBe(x!.tick + 1n);
    expect(x!.createdUtc.getTime()).toBe(ticksToDate(x!.tick).getTime());
  });

  it('caps a page by bytes as well as by count (at least one item), and pages on without loss', async () => {
    const taskId = await runningTask();
    const long = 'L'.repeat(100 * 1024);
    await record([
      {
        chunks: [
          chunk(
            taskId,
            1,
            Array.from({ length: 30 }, (_, i) => `${i} ${long}`),
          ),
        ],
      },
    ]);
    const first = await t.deps.store.deploymentLogs.readPage(deploymentId, null, 5_000, 1024 * 1024);
    const start = first.entries.findIndex((e) => e.taskId === taskId);
    let page = await t.deps.store.deploymentLogs.readPage(
      deploymentId,
      first.entries[start]!.tick - 1n,
      5_000,
      1024 * 1024,
    );
    const seen: string[] = [];
    for (let guard = 0; guard < 10; guard++) {
      expect(page.entries.reduce((n, e) => n + e.data.length, 0)).toBeLessThanOrEqual(1024 * 1024);
      seen.push(...page.entries.filter((e) => e.taskId === taskId).map((e) => e.data.split(' ')[0]!));
      if (!page.more) break;
      page = await t.deps.store.deploymentLogs.readPage(deploymentId, page.entries.at(-1)!.tick, 5_000, 1024 * 1024);
    }
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => String(i)));
    const one = await t.deps.store.deploymentLogs.readPage(deploymentId, first.entries[start]!.tick - 1n, 5_000, 10);
    expect(one.entries).toHaveLength(1);
    expect(one.more).toBe(true);
  });

  it('finds where the last n lines begin, entries and chunks merged by tick, a chunk taken whole, and counts the lines before', async () => {
    const taskId = await runningTask();
    await append([{ level: 'Information', data: 'before the chunk' }]);
    await record([{ chunks: [chunk(taskId, 1, ['c1', 'c2', 'c3', 'c4', 'c5'])] }]);
    await append([
      { level: 'Information', data: 'after 1' },
      { level: 'Information', data: 'after 2' },
    ]);
    const all = await readAll();
    const shownFor = async (n: number) => {
      const tail = await t.deps.store.deploymentLogs.tailStart(deploymentId, n);
      const shown = tail.afterTick === null ? all : all.filter((e) => e.tick > tail.afterTick!);
      expect(tail.earlierLines + shown.length).toBe(all.length);
      return shown.map((e) => e.data);
    };
    expect(await shownFor(1)).toEqual(['after 2']);
    expect(await shownFor(2)).toEqual(['after 1', 'after 2']);
    // Inside the chunk: from its first line.
    for (const n of [3, 5, 7]) expect(await shownFor(n)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'after 1', 'after 2']);
    expect(await shownFor(8)).toEqual(['before the chunk', 'c1', 'c2', 'c3', 'c4', 'c5', 'after 1', 'after 2']);
    expect(await t.deps.store.deploymentLogs.tailStart(deploymentId, all.length + 1)).toEqual({
      afterTick: null,
      earlierLines: 0,
    });
    expect(await t.deps.store.deploymentLogs.tailStart('no-such-deployment', 3)).toEqual({
      afterTick: null,
      earlierLines: 0,
    });
  });

  it('reads the lines of a level and above only, warnings inside chunks too, paging on past a page with none of them; and finds their tail', async () => {
    const taskId = await runningTask();
    await append([
      { level: 'Error', data: 'engine error' },
      { level: 'Information', data: 'engine information' },
      { level: 'Warning', data: 'engine warning' },
    ]);
    const printed = Array.from({ length: 50 }, (_, i) => `printed ${i}`);
    await record([
      {
        chunks: [
          chunk(taskId, 1, printed, Buffer.from(printed.map((_, i) => (i % 10 === 3 ? 1 : 0)))),
          chunk(taskId, 51, ['quiet 1', 'quiet 2']),
          chunk(taskId, 53, ['late warning'], Buffer.from([1])),
        ],
      },
    ]);
    await append([{ level: 'Critical', data: 'engine critical' }]);
    const all = await readAll();
    const atLeast = { Warning: ['Warning', 'Error', 'Critical'], Error: ['Error', 'Critical'] } as const;
    const expected = (floor: LogLevelFloor) =>
      all.filter((e) => (atLeast[floor] as readonly string[]).includes(e.level)).map((e) => e.data);
    const PRINTED_WARNINGS = ['printed 3', 'printed 13', 'printed 23', 'printed 33', 'printed 43'];
    expect(expected('Warning').slice(-9)).toEqual([
      'engine error',
      'engine warning',
      ...PRINTED_WARNINGS,
      'late warning',
      'engine critical',
    ]);
    expect(expected('Error').slice(-2)).toEqual(['engine error', 'engine critical']);
    const readFrom = async (floor: LogLevelFloor, limit: number, maxBytes: number) => {
      const seen: string[] = [];
      let after: bigint | null = null;
      for (let guard = 0; guard < 10_000; guard++) {
        const page = await t.deps.store.deploymentLogs.readPage(deploymentId, after, limit, maxBytes, floor);
        seen.push(...page.entries.map((e) => e.data));
        if (!page.more) break;
        expect(page.through! > (after ?? -1n)).toBe(true);
        after = page.through;
      }
      return seen;
    };
    for (const floor of ['Warning', 'Error'] as const)
      for (const [limit, maxBytes] of [
        [1_000, 1024 * 1024],
        [2, 1024 * 1024],
        [1, 10],
      ] as const)
        expect(await readFrom(floor, limit, maxBytes)).toEqual(expected(floor));
    // Resumed after 'printed 43' (a follower's Last-Event-ID), one line a page: the chunk's last lines
    // are all Information and the next chunk with a warning is cut by bytes, so the page holds none
    // of the lines asked for, says more follow, and was read through the chunk's last line.
    const tickOf = (data: string) => all.find((e) => e.data === data)!.tick;
    const resumed = await t.deps.store.deploymentLogs.readPage(deploymentId, tickOf('printed 43'), 1, 10, 'Warning');
    expect(resumed).toEqual({ entries: [], more: true, through: tickOf('printed 49') });
    const next = await t.deps.store.deploymentLogs.readPage(deploymentId, resumed.through, 1, 10, 'Warning');
    expect(next.entries.map((e) => e.data)).toEqual(['late warning']);
    // The tail counts the lines asked for, a chunk's by its warnings; it starts at a whole chunk.
    const shownFor = async (floor: LogLevelFloor, n: number) => {
      const tail = await t.deps.store.deploymentLogs.tailStart(deploymentId, n, floor);
      const shown = all.filter(
        (e) =>
          (atLeast[floor] as readonly string[]).includes(e.level) &&
          (tail.afterTick === null || e.tick > tail.afterTick),
      );
      expect(tail.earlierLines + shown.length).toBe(expected(floor).length);
      return shown.map((e) => e.data);
    };
    expect(await shownFor('Warning', 1)).toEqual(['engine critical']);
    expect(await shownFor('Warning', 2)).toEqual(['late warning', 'engine critical']);
    for (const n of [3, 7])
      expect(await shownFor('Warning', n)).toEqual([...PRINTED_WARNINGS, 'late warning', 'engine critical']);
    expect((await shownFor('Warning', 8)).slice(0, 2)).toEqual(['engine warning', 'printed 3']);
    expect(await shownFor('Error', 2)).toEqual(['engine error', 'engine critical']);
  });

  it("stores a contiguous run of a task's chunks in one statement, all or none", async () => {
    const taskId = await runningTask();
    const run = [chunk(taskId, 1, ['a', 'b']), chunk(taskId, 3, ['c']), chunk(taskId, 4, ['d', 'e'])];
    expect((await record([{ chunks: run }])).storedChunks).toEqual(new Set([taskId]));
    expect((await t.deps.store.deploymentTasks.get(taskId))!.lastLogSeq).toBe(5);
    // A run overlapping what is stored is refused whole (the engine stores its new part).
    const overlapping = await record([{ chunks: [chunk(taskId, 5, ['e']), chunk(taskId, 6, ['f'])] }]);
    expect(overlapping.refusedChunks.get(taskId)).toEqual({ lastLogSeq: 5, running: true });
    const lines = (await readAll()).filter((e) => e.taskId === taskId);
    expect(lines.map((e) => e.data)).toEqual(['a', 'b', 'c', 'd', 'e']);
    for (let i = 1; i < lines.length; i++) expect(lines[i]!.tick > lines[i - 1]!.tick).toBe(true);
    await expect(record([{ chunks: [chunk(taskId, 6, ['f']), chunk(taskId, 8, ['h'])] }])).rejects.toThrow(
      /must be contiguous/,
    );
  });

  it('keeps ticks increasing with the agent clock behind the server clock', async () => {
    const past = new Date(Date.now() - 60_000);
    const stored = await append([
      { level: 'Information', data: 'late 1', createdUtc: past },
      { level: 'Information', data: 'late 2', createdUtc: past },
    ]);
    const before = await readAll();
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
    expect(await textOf(first)).toEqual(["Step 'X'", 'child 1', 'child 2']);
    const again = await append([
      { id: parent, level: 'Information', data: "Step 'X'" },
      { level: 'Information', data: 'child 3', parentLogId: parent },
    ]);
    expect(await textOf(again)).toEqual(['child 3']);
    expect(await t.db('deployment_logs').where({ id: parent }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('ends a running task and stores its line in one statement, once; a task that is not Running stores nothing', async () => {
    const taskId = newId();
    await t.deps.store.deploymentTasks.insertManyCounted([
      { id: taskId, deploymentId, stageIndex: 0, stepId: 'step-f', stepName: 'F', machineId: null, machineName: null },
    ]);
    const end = async () =>
      (await record([{ finishes: [finish(taskId, null, 'Failed', `F finished ${taskId}`)] }])).finished;
    expect(await end()).toEqual(new Set()); // still Pending: the end is refused
    expect([...(await start([taskId])).keys()]).toEqual([taskId]);
    const before = await t.deps.store.deployments.get(deploymentId);
    expect(await end()).toEqual(new Set([taskId]));
    expect(await end()).toEqual(new Set());
    const task = await t.deps.store.deploymentTasks.get(taskId);
    expect(task).toMatchObject({ status: 'Failed', exitCode: 1, message: 'done', parentLogId: taskId });
    expect(
      await t
        .db('deployment_logs')
        .where({ data: `F finished ${taskId}` })
        .count({ n: '*' }),
    ).toEqual([{ n: '1' }]);
    expect((await t.deps.store.deployments.get(deploymentId))!.errorCount).toBe(before!.errorCount + 1);
  });

  it('sends a record in a transaction without waiting: the COMMIT behind it stores it, and one that fails rolls the transaction back', async () => {
    const { store } = t.deps;
    const line = (data: string) => ({ level: 'Information' as const, data });
    const kept = `sent ${newId()}`;
    const sent = await store.transaction(async (tx) => {
      await tx.deploymentLogs.append(deploymentId, [line(`${kept}, before`)], new Date());
      return tx.deploymentLogs.sendRecord(deploymentId, [{ entries: [line(kept)] }], new Date());
    });
    expect(await textOf((await sent.answered).stored)).toEqual([kept]);

    const lost = `lost ${newId()}`;
    const failed = await store.transaction(async (tx) => {
      await tx.deploymentLogs.append(deploymentId, [line(`${lost}, before`)], new Date());
      // level is NOT NULL: the statement fails in PostgreSQL, after it was sent.
      const bad = { level: null as unknown as 'Information', data: lost };
      return tx.deploymentLogs.sendRecord(deploymentId, [{ entries: [bad] }], new Date());
    });
    await expect(failed.answered).rejects.toThrow(/null value/);
    const texts = (await readAll()).map((entry) => entry.data);
    expect(texts).toContain(`${kept}, before`);
    expect(texts.filter((text) => text.startsWith(lost))).toEqual([]);
  });

  it("holds the deployment's row until the record's transaction ends, without holding back inserts that reference it", async () => {
    const attempt = (mode: 'NO KEY UPDATE' | 'KEY SHARE') => tryRowLock(t.db, 'deployments', deploymentId, mode);
    await t.deps.store.transaction(async (tx) => {
      await tx.deploymentLogs.append(deploymentId, [{ level: 'Information', data: 'held' }], new Date());
      // Another record waits (commits stay in tick order)…
      expect(await attempt('NO KEY UPDATE')).toBe('55P03');
      // …but a foreign-key check (FOR KEY SHARE: a task of the deployment inserted) goes on.
      expect(await attempt('KEY SHARE')).toBe('taken');
    });
    expect(await attempt('NO KEY UPDATE')).toBe('taken');
  });

  it('stores a line holding U+0000 (PostgreSQL text cannot) with a replacement character', async () => {
    const stored = await append([{ level: 'Information', data: 'before\u0000after' }]);
    expect(await textOf(stored)).toEqual(['before\uFFFDafter']);
  });
  it('starts Pending tasks with their lines in the record statement, and only those that were Pending', async () => {
    const name = `m-${newId()}`;
    const machine = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name });
    const machineId = machine.body.machineId as string;
    const [pending, other, done] = [newId(), newId(), newId()];
    await t.deps.store.deploymentTasks.insertManyCounted(
      [pending, other, done].map((id, i) => ({
        id,
        deploymentId,
        stageIndex: 0,
        stepId: 'step-s',
        stepName: 'S',
        machineId: i === 0 ? machineId : null,
        machineName: `t${i}`,
      })),
    );
    await t.deps.store.deploymentTasks.transition(done, ['Pending'], { status: 'Skipped' });
    const parent = { id: `${deploymentId}.step-s`, level: 'Information' as const, data: "Step 'S'" };
    const said = (id: string) => ({ id, level: 'Information' as const, data: `Running on ${id}`, taskId: id });
    const at = new Date();
    const result = await t.deps.store.deploymentLogs.record(
      deploymentId,
      [
        {
          starts: {
            taskIds: [pending, other, done],
            lines: [
              { entry: parent, when: [pending, other, done] },
              { entry: said(pending), when: [pending] },
              { entry: said(other), when: [other] },
              { entry: said(done), when: [done] },
            ],
          },
        },
      ],
      at,
    );
    expect([...result.started.keys()].sort()).toEqual([pending, other].sort());
    expect(result.started.get(pending)).toMatchObject({ machineId, name, enabled: true, isRegistered: false });
    expect(result.started.get(other)).toBeNull();
    expect(result.stored.map((e) => e.id)).toEqual([parent.id, pending, other]);
    const task = await t.deps.store.deploymentTasks.get(pending);
    expect(task).toMatchObject({ status: 'Running', parentLogId: pending });
    expect(task!.dispatchedUtc!.getTime()).toBe(at.getTime());
    expect((await t.deps.store.deploymentTasks.get(done))!.status).toBe('Skipped');
    // Again: nothing is Pending any more, so nothing starts and no line is stored twice or for nothing.
    const again = await t.deps.store.deploymentLogs.record(
      deploymentId,
      [{ starts: { taskIds: [pending], lines: [{ entry: said(`${pending}-again`), when: [pending] }] } }],
      new Date(),
    );
    expect(again.started.size).toBe(0);
    expect(again.stored).toEqual([]);
  });

  it('starts, then ends, thousands of tasks with a line each in one statement: every line once, in order, with a chunk among them', async () => {
    const width = 3_000;
    const ids = Array.from({ length: width }, () => newId());
    await t.deps.store.deploymentTasks.insertManyCounted(
      ids.map((id, i) => ({
        id,
        deploymentId,
        stageIndex: 0,
        stepId: 'step-w',
        stepName: 'W',
        machineId: null,
        machineName: `w${i}`,
      })),
    );
    const line = (id: string, text: string) => ({
      id: `${id}.${text}`,
      level: 'Information' as const,
      data: text,
      taskId: id,
    });
    // The last line names a task that does not start here: it is not stored.
    const started = await t.deps.store.deploymentLogs.record(
      deploymentId,
      [
        {
          starts: {
            taskIds: ids.slice(0, width - 1),
            lines: ids.map((id) => ({ entry: line(id, 'running'), when: [id] })),
          },
        },
      ],
      new Date(),
    );
    expect(started.started.size).toBe(width - 1);
    expect(started.stored.map((e) => e.id)).toEqual(ids.slice(0, width - 1).map((id) => `${id}.running`));
    const ticks = started.stored.map((e) => BigInt(e.tick));
    expect(ticks.every((tick, i) => i === 0 || tick > ticks[i - 1]!)).toBe(true);

    // The ends, with a chunk of the first task in the same statement (its lines take ticks among them).
    const [first, ...rest] = ids.slice(0, width - 1);
    const ended = await t.deps.store.deploymentLogs.record(
      deploymentId,
      [
        { chunks: [chunk(first!, 1, ['one', 'two'])] },
        {
          finishes: rest.map((id) => ({
            taskId: id,
            status: 'Succeeded' as const,
            exitCode: 0,
            message: '',
            finishedUtc: new Date(),
            line: line(id, 'ended'),
            lastLogSeq: null,
          })),
        },
      ],
      new Date(),
    );
    expect(ended.storedChunks).toEqual(new Set([first]));
    expect(ended.finished.size).toBe(rest.length);
    expect(ended.stored.map((e) => e.id)).toEqual(rest.map((id) => `${id}.ended`));
    const all = await readAll();
    const chunkAt = all.findIndex((e) => e.taskId === first && e.data === 'one');
    const firstEnd = all.findIndex((e) => e.id === `${rest[0]}.ended`);
    expect(chunkAt).toBeGreaterThanOrEqual(0);
    expect(chunkAt).toBeLessThan(firstEnd);
  });

  it("releases the deployment's lease in the statement when the given replica holds it, and only then", async () => {
    const lease = () => t.db('deployments').where({ id: deploymentId }).first('lease_owner', 'lease_until');
    const hold = (owner: string) =>
      t
        .db('deployments')
        .where({ id: deploymentId })
        .update({ lease_owner: owner, lease_until: new Date(Date.now() + 60_000) });
    const line = (data: string) => [{ entries: [{ level: 'Information' as const, data }] }];
    await hold('replica-1');
    const released = await t.deps.store.deploymentLogs.record(deploymentId, line('ours'), new Date(), {
      releaseBy: 'replica-1',
    });
    expect(released.released).toBe(true);
    expect(await lease()).toEqual({ lease_owner: null, lease_until: null });
    // Another replica's lease stays; the answer says the asking replica holds none.
    await hold('replica-2');
    const other = await t.deps.store.deploymentLogs.record(deploymentId, line('theirs'), new Date(), {
      releaseBy: 'replica-1',
    });
    expect(other.released).toBe(true);
    expect((await lease()).lease_owner).toBe('replica-2');
    // Not asked: nothing released.
    const kept = await t.deps.store.deploymentLogs.record(deploymentId, line('kept'), new Date());
    expect(kept.released).toBe(false);
    expect((await lease()).lease_owner).toBe('replica-2');
    await t.db('deployments').where({ id: deploymentId }).update({ lease_owner: null, lease_until: null });
  });

  it('a claim reads which of the tasks it was given have ended since, in the same statement', async () => {
    const [running, ended] = [await runningTask(), await runningTask()];
    await record([{ finishes: [finish(ended, null, 'Failed')] }]);
    const now = new Date();
    const claimed = await t.deps.store.deployments.claim(
      deploymentId,
      'replica-x',
      now,
      new Date(now.getTime() + 5000),
      [running, ended],
    );
    expect(claimed!.ended.map((task) => [task.id, task.status, task.exitCode])).toEqual([[ended, 'Failed', 1]]);
    expect(claimed!.ended[0]!.finishedUtc).toBeInstanceOf(Date);
    await t.deps.store.deployments.releaseLease(deploymentId, 'replica-x');
  });

  it("reads no line past the deployment's last tick in that read: such a line is of a record the read did not see whole", async () => {
    // A record moves the deployment's last tick in the commit that stores its lines, so one snapshot
    // never holds a line past it; written here by hand, such lines show that both sources (entries
    // and chunks) stop at that last tick, so neither line is shown without the other.
    const taskId = await runningTask();
    const [before] = await append([{ level: 'Information', data: 'before' }]);
    const { last_log_tick: lastTick } = await t.db('deployments').where({ id: deploymentId }).first('last_log_tick');
    const cap = BigInt(lastTick);
    await t.db('deployment_logs').insert({
      id: newId(),
      deployment_id: deploymentId,
      tick: (cap + 10n).toString(),
      created_at: new Date(),
      level: 'Information',
      data: 'a later entry',
    });
    const later = chunk(taskId, 900, ['a later line']);
    await t.db('deployment_log_chunks').insert({
      deployment_id: deploymentId,
      task_id: taskId,
      step_id: later.stepId,
      parent_log_id: later.parentLogId,
      first_seq: later.firstSeq,
      line_count: 1,
      first_tick: (cap + 11n).toString(),
      last_tick: (cap + 11n).toString(),
      byte_count: later.data.length,
      data: later.data,
    });
    const page = await t.deps.store.deploymentLogs.readPage(deploymentId, before!.tick - 1n, 5_000, 1024 * 1024);
    expect(page.entries.map((e) => e.data)).toEqual(['before']);
    // Once the deployment says those lines are there, they are read, in order.
    await t
      .db('deployments')
      .where({ id: deploymentId })
      .update({ last_log_tick: (cap + 11n).toString() });
    const next = await t.deps.store.deploymentLogs.readPage(deploymentId, cap, 5_000, 1024 * 1024);
    expect(next.entries.map((e) => e.data)).toEqual(['a later entry', 'a later line']);
  });

  it('reads the deployment with a page of its lines in one statement, as deployments.get and readPage would', async () => {
    const [line] = await append([{ level: 'Warning', data: 'with the deployment' }]);
    const { store } = t.deps;
    const statements: string[] = [];
    const count = (query: { sql: string }) => statements.push(query.sql);
    t.db.on('query', count);
    const read = await store.deploymentLogs.readWithDeployment(deploymentId, line!.tick - 1n, 5_000);
    t.db.off('query', count);
    expect(statements).toHaveLength(1);
    expect(read!.deployment).toEqual(await store.deployments.get(deploymentId));
    expect(read!.organizationId).toBe((await store.deployments.getWithOrganization(deploymentId))!.organizationId);
    expect(read!.page.more).toBe(false);
    expect(read!.page.entries.map((e) => [e.id, e.tick, e.level, e.data])).toEqual([
      [line!.id, line!.tick, 'Warning', 'with the deployment'],
    ]);
    // A short page says more follow, as readPage does.
    const short = await store.deploymentLogs.readWithDeployment(deploymentId, 0n, 1);
    expect(short!.page.more).toBe(true);
    expect(short!.page).toEqual(await store.deploymentLogs.readPage(deploymentId, 0n, 1));
    expect(await store.deploymentLogs.readWithDeployment(newId(), 0n, 5_000)).toBeNull();
  });
});
