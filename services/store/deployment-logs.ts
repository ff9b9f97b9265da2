/**
 * Deployment logs: entries the engine writes (one row each in deployment_logs) and what agents
 * print (chunks of a task's lines in deployment_log_chunks). Every line has a .NET tick unique
 * within its deployment and increasing in the order lines were written: ticks are allocated under
 * the deployment's row lock, so `getLogsAfter=T` (strictly after) never skips or repeats a line.
 */
import {
  dateToTicks,
  decodeVarints,
  FINAL_STATUSES,
  newId,
  ticksToDate,
  type DeploymentStatus,
  type LogLevelFloor,
} from '../core/index.ts';
import { sendWithoutWaiting, type Db } from './db.ts';
import { MACHINE_JSON_SQL, targetMachineFromJson, type TargetMachine } from './deployment-machines.ts';
import { DEPLOYMENT_JSON_COLUMNS, deploymentFromJson, type Deployment } from './deployments.ts';
import { jsonDate } from './json-rows.ts';

export const LogLevel = {
  Trace: 'Trace',
  Debug: 'Debug',
  Information: 'Information',
  Warning: 'Warning',
  Error: 'Error',
  Critical: 'Critical',
  None: 'None',
} as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

/** The levels at a floor and above. Agents print Information and Warning only; Error and Critical are the engine's entries. */
const LEVELS_FROM: Record<LogLevelFloor, ReadonlySet<LogLevel>> = {
  Warning: new Set([LogLevel.Warning, LogLevel.Error, LogLevel.Critical]),
  Error: new Set([LogLevel.Error, LogLevel.Critical]),
};
const levelsSql = (floor: LogLevelFloor) => [...LEVELS_FROM[floor]].map((level) => `'${level}'`).join(', ');

/**
 * SQL for the lines at `floor` and above: the entries of those levels, and the chunks holding a
 * Warning (`levels` is null when every line is Information; one byte 0 or 1 per line, so
 * bit_count is the chunk's number of warnings) counted by their warnings — or no chunk at all.
 */
function floorSql(floor: LogLevelFloor | null, entry: string, chunk: string) {
  if (floor === null) return { entries: '', chunks: '', chunkLines: `${chunk}.line_count` };
  return {
    entries: ` AND ${entry}.level IN (${levelsSql(floor)})`,
    chunks: floor === 'Warning' ? ` AND ${chunk}.levels IS NOT NULL` : ' AND false',
    chunkLines: `bit_count(${chunk}.levels)`,
  };
}

export interface NewLogEntry {
  /** Set when the caller needs to refer to the entry (as a parent) before it is stored. */
  id?: string;
  level: LogLevel;
  data: string;
  stepId?: string | null;
  parentLogId?: string | null;
  taskId?: string | null;
  exceptionData?: string | null;
  createdUtc?: Date;
}

/**
 * Consecutive lines one task's agent printed (seq firstSeq .. firstSeq + lineCount - 1), as the
 * agent sent them: the text of every line followed by '\n', one level byte per line, and the
 * lines' own times as tick steps. Stored as one row.
 */
export interface NewLogChunk {
  taskId: string;
  stepId: string | null;
  parentLogId: string | null;
  firstSeq: number;
  lineCount: number;
  /** When the first line was printed (already no later than the server's clock). */
  firstTick: bigint;
  /** Ticks from each line to the next (lineCount - 1 varints of at least 1); null: 1 each. */
  tickSteps: Buffer | null;
  /** The sum of tickSteps: the chunk spans firstTick .. firstTick + spanTicks. */
  spanTicks: bigint;
  /** One byte per line, 0 Information, 1 Warning; null: all Information. */
  levels: Buffer | null;
  warnings: number;
  data: string;
}

export interface LogEntry {
  id: string;
  deploymentId: string;
  tick: bigint;
  createdUtc: Date;
  level: LogLevel;
  data: string;
  exceptionData: string | null;
  stepId: string | null;
  parentLogId: string | null;
  taskId: string | null;
}

interface LogRow {
  id: string;
  deployment_id: string;
  tick: string;
  created_at: Date;
  level: LogLevel;
  data: string;
  exception_data: string | null;
  step_id: string | null;
  parent_log_id: string | null;
  task_id: string | null;
}

interface ChunkRow {
  first_tick: string;
  last_tick: string;
  task_id: string;
  step_id: string | null;
  parent_log_id: string | null;
  first_seq: number;
  line_count: number;
  levels: Buffer | null;
  tick_steps: Buffer | null;
  data: string;
  head_rows: string;
}

function toEntry(row: LogRow): LogEntry {
  const tick = BigInt(row.tick);
  return {
    id: row.id,
    deploymentId: row.deployment_id,
    tick,
    // One line, one time: CreatedUtc is its tick's instant (the tick is the order; a line written
    // late gets a later tick than the clock it was printed by, and says so).
    createdUtc: ticksToDate(tick),
    level: row.level,
    data: row.data,
    exceptionData: row.exception_data,
    stepId: row.step_id,
    parentLogId: row.parent_log_id,
    taskId: row.task_id,
  };
}

/** A chunk's lines as log items (ids `<taskId>.<seq>`), the ticks after `afterTick` only. */
function explodeChunk(deploymentId: string, row: ChunkRow, afterTick: bigint): LogEntry[] {
  const steps = row.tick_steps ? decodeVarints(row.tick_steps) : null;
  const lines = row.data.split('\n');
  const entries: LogEntry[] = [];
  let tick = BigInt(row.first_tick);
  for (let i = 0; i < row.line_count; i++) {
    if (i > 0) tick += steps ? BigInt(steps[i - 1]!) : 1n;
    if (tick <= afterTick) continue;
    entries.push({
      id: `${row.task_id}.${row.first_seq + i}`,
      deploymentId,
      tick,
      createdUtc: ticksToDate(tick),
      level: row.levels?.[i] === 1 ? 'Warning' : 'Information',
      data: lines[i] ?? '',
      exceptionData: null,
      stepId: row.step_id,
      parentLogId: row.parent_log_id,
      taskId: row.task_id,
    });
  }
  return entries;
}

/** A task's end, written with its log line: the line is stored exactly when the task moved. */
export interface TaskFinish {
  taskId: string;
  status: 'Succeeded' | 'Failed' | 'Cancelled';
  exitCode: number | null;
  message: string;
  finishedUtc: Date;
  line: NewLogEntry;
  /**
   * The agent's result covers its lines 1..lastLogSeq: the task ends only once all of them are
   * stored (the final status never comes before the last line). Null: decided by the server.
   */
  lastLogSeq: number | null;
}

/** Tasks moved from Pending to Running in a record statement (at most one such set per statement). */
export interface TaskStarts {
  taskIds: readonly string[];
  /** Each line is stored only when one of the tasks it names (`when`) started. */
  lines: ReadonlyArray<{ entry: NewLogEntry; when: readonly string[] }>;
}

/** An entry a record stored, as it answers it: its ID and tick (what was written is the caller's). */
export interface StoredEntry {
  id: string;
  tick: bigint;
}

export interface RecordResult {
  /** The entries actually stored (an entry whose id was stored before is not), in tick order. */
  stored: StoredEntry[];
  /** Tasks that moved from Running to their final status in this statement. */
  finished: Set<string>;
  /** Tasks whose chunks were stored. */
  storedChunks: Set<string>;
  /**
   * Tasks whose chunks were not stored, with their last stored seq: the task is not running any
   * more, or its chunks do not start after that seq (a re-sent batch: the caller stores its new part).
   * A task of another deployment, or none at all, is absent from both.
   */
  refusedChunks: Map<string, { lastLogSeq: number; running: boolean }>;
  /** Tasks that moved from Pending to Running (see LogReport.starts), with their machine (null: none, or deleted). */
  started: Map<string, TargetMachine | null>;
  /** The lease this statement took (RecordClaim); null when none was asked for or it was not free. */
  claimed: {
    /** advance_seq after the claim, as deployments.claim answers it. */
    advanceSeq: number;
    status: DeploymentStatus;
    cancellationRequestedUtc: Date | null;
    /** The lease holder before (another replica's name: its lease had expired). */
    previousLeaseOwner: string | null;
  } | null;
  /** The lease was released (RecordLease.releaseBy), or another replica's or nobody's by now. */
  released: boolean;
}

/**
 * A lease claim taken by the statement that records lines (deployments.claim's rule: the lease is
 * free, already the owner's, or expired; the deployment is Running), so the replica that records a
 * task's end can advance the deployment without a claim statement of its own. Taken only when the
 * statement stores a line (the end moved the task).
 */
export interface RecordClaim {
  owner: string;
  leaseUntil: Date;
}

/**
 * What a record does with the deployment's lease: `claim` takes it (RecordClaim); `releaseBy`
 * releases it when that replica holds it (an advance whose last write this is: one statement
 * less than releasing it after). Either only when the statement stores a line.
 */
export interface RecordLease {
  claim?: RecordClaim | undefined;
  releaseBy?: string | undefined;
}

/**
 * Hot path: what happened in one deployment — engine entries, agent chunks, and tasks that ended
 * with their lines — in ONE statement, optionally taking or releasing the deployment's lease (RecordLease).
 * Parameters, in order (record() passes them): the starts' times, IDs and deployment; task ends
 * (JSON), deployment ID, chunks (JSON), deployment ID ×2, entries (JSON), deployment ID ×2, the
 * claim's owner and lease end (null: no claim), now, the releasing owner (null: none), now,
 * deployment ID ×2.
 *
 * Task ends: Running → final, guarded, so a result is recorded once, and only once every line it
 * covers is stored (last_log_seq). An entry with `requires_task` is stored only when that task
 * moved in this statement (the end and its line commit together).
 *
 * Chunks: a task's chunks in one statement are one contiguous run of its lines, stored all or
 * none: only for a running task of the deployment and only when the run starts after its last
 * stored line (so a batch re-sent after a reconnect is stored once); the task's last_log_seq
 * moves to the run's last line. A task's chunks and its end never share a statement (the
 * progress writer keeps them apart): both update the task's row.
 *
 * Ticks: items (entries and chunks, in `ord` order) take consecutive ranges: item r starts at
 * max(end of item r-1 + 1, its own created tick) and a chunk spans `span` ticks. With P_r the
 * ticks taken before item r (Σ span + 1), that unrolls to start_r = P_r + max(last + 1, max over
 * j ≤ r of (created_j - P_j)): a running max, so window functions compute every start. The row
 * lock on the deployment (held to the end of the transaction) makes commits happen in tick order,
 * so a reader paging with `tick > T` never skips a line that commits later. It is FOR NO KEY
 * UPDATE, the lock the statement's UPDATE of the row takes anyway: FOR UPDATE also held back the
 * foreign-key checks of rows inserted meanwhile for the deployment (the rest of a wide plan's
 * tasks, an approval) until the record committed.
 *
 * An entry whose id is already stored is skipped, so a caller can write a parent entry with a
 * fixed id ("Step 'Deploy'") before each batch of its children and it is stored once.
 */
/**
 * The lease claim a record may carry (LogReport claim below): taken as deployments.claim takes it
 * — free, ours already, or expired — and only on a Running deployment. SET expressions see the
 * row as it was, so each CASE tests the same old lease.
 */
const CLAIMABLE = `(SELECT owner FROM claim) IS NOT NULL AND status = 'Running'
  AND (lease_owner IS NULL OR lease_owner = (SELECT owner FROM claim) OR lease_until < (SELECT now FROM claim))`;

/**
 * Tasks are found here by their IDs, as `t.id = any(<array>)`, which the primary key serves for
 * the few IDs a statement has; a join with the input alone was planned as a read of the whole
 * table. `(t.deployment_id = ? AND …) IS TRUE` is the same test as without `IS TRUE`, written so
 * that no index serves it: PostgreSQL estimates a deployment's task count from the average (or
 * from statistics taken while the table was small), so for a 10,000-machine deployment it chose
 * the (deployment_id, …) index and read every version of every task of the deployment to find
 * the five a statement records, in every statement (test/services/store/task-lookups.test.ts;
 * bench/README, eighteenth session). Likewise the entries' `ON CONFLICT (id) DO NOTHING` finds
 * one already stored by its key, where a `NOT EXISTS` was planned as a read of the whole table.
 */
const RECORD_SQL = `
WITH started AS (
  UPDATE deployment_tasks AS t
  SET status = 'Running', parent_log_id = t.id, dispatched_at = ?, started_at = ?
  WHERE t.id = any(CAST(? AS text[])) AND (t.deployment_id = ? AND t.status = 'Pending') IS TRUE
  RETURNING t.id, t.machine_id
), finish_input AS (
  SELECT f.* FROM jsonb_to_recordset(CAST(? AS jsonb))
    AS f(id text, status text, exit_code int, message text, finished_at timestamptz, last_log_seq int)
), moved AS (
  UPDATE deployment_tasks AS t
  SET status = f.status, exit_code = f.exit_code, message = f.message, finished_at = f.finished_at
  FROM finish_input f
  WHERE t.id = any(ARRAY(SELECT id FROM finish_input)) AND t.id = f.id
    AND (t.deployment_id = ? AND t.status = 'Running') IS TRUE
    AND (f.last_log_seq IS NULL OR t.last_log_seq >= f.last_log_seq)
  RETURNING t.id
), chunk_input AS (
  SELECT c.* FROM jsonb_to_recordset(CAST(? AS jsonb)) AS c(
    ord int, task_id text, step_id text, parent_log_id text, first_seq int, line_count int, byte_count int,
    created_tick bigint, span bigint, levels text, tick_steps text, warnings int, data text)
), chunk_runs AS (
  SELECT task_id, min(first_seq) AS first_seq, max(first_seq + line_count - 1) AS last_seq
  FROM chunk_input GROUP BY task_id
), advanced AS (
  UPDATE deployment_tasks AS t SET last_log_seq = c.last_seq
  FROM chunk_runs c
  WHERE t.id = any(ARRAY(SELECT task_id FROM chunk_runs)) AND t.id = c.task_id
    AND (t.deployment_id = ? AND t.status = 'Running') IS TRUE AND t.last_log_seq < c.first_seq
  RETURNING t.id
), locked AS (
  SELECT last_log_tick FROM deployments WHERE id = ? FOR NO KEY UPDATE
), entry_input AS (
  SELECT x.* FROM jsonb_to_recordset(CAST(? AS jsonb)) AS x(
    ord int, id text, created_tick bigint, level text, data text,
    exception_data text, step_id text, parent_log_id text, task_id text, requires_task text, requires_start text[])
), items AS (
  -- An entry's columns ride along with its place, so that no join brings them together again (a
  -- join of entries with their ticks was planned as a nested loop on row estimates of 1,
  -- comparing every entry with every tick).
  SELECT ord, created_tick, 0::bigint AS span, true AS is_entry, id, level, data, exception_data, step_id,
         parent_log_id, task_id, requires_task, requires_start
  FROM entry_input
  UNION ALL
  SELECT ord, created_tick, span, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM chunk_input WHERE task_id IN (SELECT id FROM advanced)
), placed AS (
  SELECT items.*, coalesce(sum(span + 1) OVER (ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS p
  FROM items
), ticked AS (
  SELECT placed.*,
         p + greatest((SELECT last_log_tick FROM locked) + 1,
                      max(created_tick - p) OVER (ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS start_tick
  FROM placed
  WHERE EXISTS (SELECT 1 FROM locked)
), start_met AS (
  -- Entries one of whose tasks started here, as a join (array overlap against every start would
  -- compare each entry with each start: 10,000 starts with their lines took ~1 s that way).
  SELECT DISTINCT e.ord FROM entry_input e CROSS JOIN LATERAL unnest(e.requires_start) AS r(id) JOIN started s ON s.id = r.id
), fresh AS (
  SELECT t.*, t.start_tick AS tick FROM ticked t
  WHERE t.is_entry
    AND (t.requires_task IS NULL OR t.requires_task IN (SELECT id FROM moved))
    AND (t.requires_start IS NULL OR t.ord IN (SELECT ord FROM start_met))
), ins AS (
  INSERT INTO deployment_logs (id, deployment_id, tick, created_at, level, data, exception_data, step_id, parent_log_id, task_id)
  SELECT id, ?, tick, to_timestamp((tick - 621355968000000000) / 10000000.0), level, data, exception_data, step_id, parent_log_id, task_id FROM fresh
  ON CONFLICT (id) DO NOTHING
  RETURNING id, tick, level
), chunks AS (
  INSERT INTO deployment_log_chunks (deployment_id, first_tick, last_tick, task_id, step_id, parent_log_id, first_seq,
    line_count, byte_count, levels, tick_steps, data)
  SELECT ?, t.start_tick, t.start_tick + c.span, c.task_id, c.step_id, c.parent_log_id, c.first_seq, c.line_count,
         c.byte_count, decode(c.levels, 'base64'), decode(c.tick_steps, 'base64'), c.data
  FROM chunk_input c JOIN ticked t ON t.ord = c.ord
  RETURNING last_tick, task_id
), claim AS (
  SELECT CAST(? AS text) AS owner, CAST(? AS timestamptz) AS until, CAST(? AS timestamptz) AS now,
         CAST(? AS text) AS release_by
), upd AS (
  UPDATE deployments SET
    last_log_tick = greatest(last_log_tick, (SELECT max(tick) FROM ins), (SELECT max(last_tick) FROM chunks)),
    error_count = error_count + (SELECT count(*) FROM ins WHERE level IN ('Error', 'Critical')),
    warning_count = warning_count + (SELECT count(*) FROM ins WHERE level = 'Warning')
      + (SELECT coalesce(sum(c.warnings), 0) FROM chunk_input c WHERE c.task_id IN (SELECT task_id FROM chunks)),
    last_update_at = ?,
    change_tick = nextval('deployment_change_seq'),
    lease_owner = CASE WHEN ${CLAIMABLE} THEN (SELECT owner FROM claim)
      WHEN lease_owner = (SELECT release_by FROM claim) THEN NULL ELSE lease_owner END,
    lease_until = CASE WHEN ${CLAIMABLE} THEN (SELECT until FROM claim)
      WHEN lease_owner = (SELECT release_by FROM claim) THEN NULL ELSE lease_until END,
    advance_seq = CASE WHEN ${CLAIMABLE} THEN advance_seq + 1 ELSE advance_seq END
  WHERE id = ? AND (EXISTS (SELECT 1 FROM ins) OR EXISTS (SELECT 1 FROM chunks))
  RETURNING id, advance_seq, status, cancellation_requested_at,
    lease_owner = (SELECT owner FROM claim) AND lease_until = (SELECT until FROM claim) AS claimed,
    (SELECT release_by FROM claim) IS NOT NULL AND lease_owner IS DISTINCT FROM (SELECT release_by FROM claim) AS released
)
SELECT 'entry' AS kind, ins.id, ins.tick, NULL::text AS data, NULL::int AS last_log_seq, NULL::text AS status
FROM ins
UNION ALL
SELECT 'refused', t.id, NULL, NULL, t.last_log_seq, t.status
FROM deployment_tasks t
WHERE t.id = any(ARRAY(SELECT task_id FROM chunk_input)) AND (t.deployment_id = ?) IS TRUE
  AND t.id NOT IN (SELECT id FROM advanced)
UNION ALL
SELECT 'moved', id, NULL, NULL, NULL, NULL FROM moved
UNION ALL
SELECT 'chunk', task_id, NULL, NULL, NULL, NULL FROM chunks
UNION ALL
SELECT 'started', s.id, NULL, (SELECT ${MACHINE_JSON_SQL}::text FROM machines m WHERE m.id = s.machine_id), NULL, NULL
FROM started s
UNION ALL
SELECT 'claimed', u.id, NULL,
       json_build_object('advance_seq', u.advance_seq, 'status', u.status,
         'cancellation_requested_at', u.cancellation_requested_at,
         'previous_lease_owner', (SELECT old.lease_owner FROM deployments old WHERE old.id = u.id))::text,
       NULL, NULL
FROM upd u WHERE u.claimed
UNION ALL
SELECT 'released', u.id, NULL, NULL, NULL, NULL FROM upd u WHERE u.released`;

/** PostgreSQL text cannot hold U+0000; a script may print it. */
const storable = (text: string) => (text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text);

/** A record statement's answer row: `tick` for an entry, `data` (JSON) for a start or a claim. */
interface RecordRow {
  kind: 'entry' | 'refused' | 'moved' | 'chunk' | 'started' | 'claimed' | 'released';
  id: string;
  tick: string | null;
  data: string | null;
  last_log_seq: number | null;
  status: string | null;
}

/** One caller's writes: its entries, its agents' chunks and its task ends, in that order. */
export interface LogReport {
  /** Pending tasks that start now (dispatched), with the lines that say so. */
  starts?: TaskStarts;
  entries?: readonly NewLogEntry[];
  chunks?: readonly NewLogChunk[];
  finishes?: readonly TaskFinish[];
}

async function record(
  db: Db,
  deploymentId: string,
  reports: readonly LogReport[],
  now: Date,
  lease: RecordLease = {},
): Promise<RecordResult> {
  return (await sendRecord(db, deploymentId, reports, now, lease)).answered;
}

/**
 * record, resolving once its statement is sent (db.ts, sendWithoutWaiting): in a transaction, the
 * COMMIT then follows it without waiting a round trip for its answer, which `answered` gives.
 */
async function sendRecord(
  db: Db,
  deploymentId: string,
  reports: readonly LogReport[],
  now: Date,
  lease: RecordLease = {},
): Promise<{ answered: Promise<RecordResult> }> {
  const { claim, releaseBy } = lease;
  let ord = 0;
  const nowTick = dateToTicks(now);
  // An id repeated within the batch (a parent written before each of its children) counts once.
  const seen = new Set<string>();
  const entryInput: Array<Record<string, unknown> & { id: string; requires_task: string | null }> = [];
  const chunkInput: Array<Record<string, unknown>> = [];
  const ends: Array<Record<string, unknown>> = [];
  /** The seq each task's next chunk in this statement must start at (its run is contiguous). */
  const nextSeqOf = new Map<string, number>();
  const addEntry = (
    entry: NewLogEntry,
    requiresTask: string | null,
    requiresStart: readonly string[] | null = null,
  ) => {
    if (entry.id !== undefined && (seen.has(entry.id) || !seen.add(entry.id))) return;
    entryInput.push({
      ord: ord++,
      id: entry.id ?? newId(),
      created_tick: (entry.createdUtc ? dateToTicks(entry.createdUtc) : nowTick).toString(),
      level: entry.level,
      data: storable(entry.data),
      exception_data: entry.exceptionData == null ? null : storable(entry.exceptionData),
      step_id: entry.stepId ?? null,
      parent_log_id: entry.parentLogId ?? null,
      task_id: entry.taskId ?? null,
      requires_task: requiresTask,
      requires_start: requiresStart,
    });
  };
  const startIds: string[] = [];
  for (const report of reports) {
    for (const entry of report.entries ?? []) addEntry(entry, null);
    for (const id of report.starts?.taskIds ?? []) startIds.push(id);
    for (const { entry, when } of report.starts?.lines ?? []) addEntry(entry, null, when);
    for (const chunk of report.chunks ?? []) {
      const expected = nextSeqOf.get(chunk.taskId);
      if (expected !== undefined && chunk.firstSeq !== expected)
        throw new Error(
          `Chunks of task ${chunk.taskId} in one statement must be contiguous: ${chunk.firstSeq} after ${expected - 1}`,
        );
      nextSeqOf.set(chunk.taskId, chunk.firstSeq + chunk.lineCount);
      chunkInput.push({
        ord: ord++,
        task_id: chunk.taskId,
        step_id: chunk.stepId,
        parent_log_id: chunk.parentLogId,
        first_seq: chunk.firstSeq,
        line_count: chunk.lineCount,
        byte_count: chunk.data.length,
        created_tick: chunk.firstTick.toString(),
        span: chunk.spanTicks.toString(),
        levels: chunk.levels ? chunk.levels.toString('base64') : null,
        tick_steps: chunk.tickSteps ? chunk.tickSteps.toString('base64') : null,
        warnings: chunk.warnings,
        data: storable(chunk.data),
      });
    }
    for (const finish of report.finishes ?? []) {
      ends.push({
        id: finish.taskId,
        status: finish.status,
        exit_code: finish.exitCode,
        message: storable(finish.message),
        finished_at: finish.finishedUtc.toISOString(),
        last_log_seq: finish.lastLogSeq,
      });
      addEntry({ ...finish.line, id: finish.line.id ?? newId() }, finish.taskId);
    }
  }
  if (entryInput.length === 0 && chunkInput.length === 0 && startIds.length === 0)
    return {
      answered: Promise.resolve({
        stored: [],
        finished: new Set(),
        storedChunks: new Set(),
        refusedChunks: new Map(),
        started: new Map(),
        claimed: null,
        released: false,
      }),
    };
  // A named (server-side prepared) statement: planning this one took ~0.5–0.8 ms of PostgreSQL's
  // CPU per execution against ~0.2 ms to run it; prepared, its plan is kept per connection.
  const { answered } = await sendWithoutWaiting(
    db
      .raw<{ rows: RecordRow[] }>(RECORD_SQL, [
        now,
        now,
        startIds,
        deploymentId,
        JSON.stringify(ends),
        deploymentId,
        JSON.stringify(chunkInput),
        deploymentId,
        deploymentId,
        JSON.stringify(entryInput),
        deploymentId,
        deploymentId,
        claim?.owner ?? null,
        claim?.leaseUntil ?? null,
        now,
        releaseBy ?? null,
        now,
        deploymentId,
        deploymentId,
      ])
      .options({ name: 'gantry_deployment_logs_record_v10' }),
  );
  const result = answered.then((answer) => toRecordResult(answer.rows, entryInput));
  // Handled here too: a failure may come before the caller awaits it (after its COMMIT).
  result.catch(() => undefined);
  return { answered: result };
}

function toRecordResult(
  rows: readonly RecordRow[],
  entryInput: ReadonlyArray<{ id: string; requires_task: string | null }>,
): RecordResult {
  const stored: StoredEntry[] = [];
  const storedChunks = new Set<string>();
  const refusedChunks = new Map<string, { lastLogSeq: number; running: boolean }>();
  const started = new Map<string, TargetMachine | null>();
  let claimed: RecordResult['claimed'] = null;
  let released = false;
  for (const row of rows) {
    if (row.kind === 'entry') stored.push({ id: row.id, tick: BigInt(row.tick!) });
    else if (row.kind === 'started')
      started.set(
        row.id,
        row.data === null ? null : targetMachineFromJson(JSON.parse(row.data) as Record<string, unknown>),
      );
    else if (row.kind === 'chunk') storedChunks.add(row.id);
    else if (row.kind === 'refused')
      refusedChunks.set(row.id, { lastLogSeq: row.last_log_seq ?? 0, running: row.status === 'Running' });
    else if (row.kind === 'released') released = true;
    else if (row.kind === 'claimed') {
      const taken = JSON.parse(row.data!) as {
        advance_seq: number;
        status: DeploymentStatus;
        cancellation_requested_at: string | null;
        previous_lease_owner: string | null;
      };
      claimed = {
        advanceSeq: taken.advance_seq,
        status: taken.status,
        cancellationRequestedUtc: jsonDate(taken.cancellation_requested_at),
        previousLeaseOwner: taken.previous_lease_owner,
      };
    }
  }
  stored.sort((a, b) => (a.tick < b.tick ? -1 : a.tick > b.tick ? 1 : 0));
  const storedIds = new Set(stored.map((e) => e.id));
  // A task's end line has a fresh id: it is stored exactly when the task moved.
  const finished = new Set(
    entryInput.filter((i) => i.requires_task !== null && storedIds.has(i.id)).map((i) => i.requires_task!),
  );
  return { stored, finished, storedChunks, refusedChunks, started, claimed, released };
}

/**
 * The chunks after a tick, at most CHUNK_HEAD of them considered, cut where the lines or bytes
 * before a chunk already fill the page; `head_rows` says how many were considered (so a reader
 * knows whether more follow). The chunks' text is read only for those returned.
 */
const CHUNK_HEAD = 256;
/**
 * Both sources of a page in one statement, so on one snapshot, each up to the deployment's last
 * tick: a record that committed meanwhile is wholly seen or not at all (its entry and its chunk
 * line are never half read, which would lose the entry: the next read asks for what follows the
 * line). Rows: `src` 'e' an entry, 'c' a chunk, 'd' the deployment itself as JSON in `data`
 * (readWithDeployment: the status and the lines of one instant); one row of nulls when the
 * deployment exists and nothing else matches.
 */
function pageSql(withDeployment: boolean, floor: LogLevelFloor | null): string {
  const only = floorSql(floor, 'l', 'c');
  // The first branch names the columns; the others fill what they lack with NULL.
  const entryOnly = 'NULL, NULL, NULL, NULL, NULL, NULL';
  const chunkOnly = 'NULL, NULL, NULL, NULL, NULL, NULL, NULL';
  const deploymentRow = withDeployment
    ? `
  UNION ALL
  SELECT 'd', ${entryOnly}, NULL, NULL, NULL,
         (SELECT row_to_json(x)::text FROM (
           SELECT ${DEPLOYMENT_JSON_COLUMNS}, w.organization_id AS workspace_organization_id FROM deployments WHERE id = d.id) x),
         ${chunkOnly}`
    : '';
  return `
SELECT s.* FROM deployments d
${withDeployment ? 'JOIN workspaces w ON w.id = d.workspace_id AND w.deleted_at IS NULL' : ''}
LEFT JOIN LATERAL (
  (SELECT 'e' AS src, l.id, l.deployment_id, l.tick, l.created_at, l.level, l.exception_data,
          l.step_id, l.parent_log_id, l.task_id, l.data,
          NULL::bigint AS first_tick, NULL::bigint AS last_tick, NULL::int AS first_seq, NULL::int AS line_count,
          NULL::bytea AS levels, NULL::bytea AS tick_steps, NULL::bigint AS head_rows
   FROM deployment_logs l WHERE l.deployment_id = d.id AND l.tick > ? AND l.tick <= d.last_log_tick${only.entries}
   ORDER BY l.tick LIMIT ?)
  UNION ALL
  (WITH head AS (
    SELECT c.last_tick, ${only.chunkLines} AS line_count, c.byte_count FROM deployment_log_chunks c
    WHERE c.deployment_id = d.id AND c.last_tick > ? AND c.last_tick <= d.last_log_tick${only.chunks}
    ORDER BY c.last_tick LIMIT ${CHUNK_HEAD}
  ), sized AS (
    SELECT last_tick,
           sum(line_count) OVER w - line_count AS lines_before,
           sum(byte_count) OVER w - byte_count AS bytes_before,
           count(*) OVER () AS head_rows
    FROM head WINDOW w AS (ORDER BY last_tick ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
  )
  SELECT 'c', ${entryOnly}, c.step_id, c.parent_log_id, c.task_id, c.data,
         c.first_tick, c.last_tick, c.first_seq, c.line_count, c.levels, c.tick_steps, s.head_rows
  FROM sized s JOIN deployment_log_chunks c ON c.deployment_id = d.id AND c.last_tick = s.last_tick
  WHERE s.lines_before < ? AND s.bytes_before < ?)${deploymentRow}
) s ON true
WHERE d.id = ?
ORDER BY coalesce(s.tick, s.last_tick)`;
}
/** Named (server-side prepared): a follower reads one of these at every change of its deployment. */
const PAGE_STATEMENTS = new Map(
  [false, true].flatMap((withDeployment) =>
    ([null, 'Warning', 'Error'] as const).map((floor) => [
      `${withDeployment}:${floor}`,
      {
        sql: pageSql(withDeployment, floor),
        name: `gantry_log_page${withDeployment ? '_with_deployment' : ''}${floor ? `_${floor.toLowerCase()}` : ''}_v1`,
      },
    ]),
  ),
);

/** Bytes a log item costs in a page besides its text (its JSON field names and values). */
const ITEM_OVERHEAD_BYTES = 300;

/** A page of log items, and whether more follow it already (it was cut by count or by bytes). */
export interface LogPage {
  entries: LogEntry[];
  more: boolean;
  /**
   * The tick the page was read through (null: nothing read): the next page is after it. Past the
   * last item when the lines after it were below the level asked for.
   */
  through: bigint | null;
}

/** A row of PAGE_SQL: src null on the one row of a deployment without lines to show. */
type PageRow = { src: 'e' | 'c' | 'd' | null } & LogRow & ChunkRow;

async function readPage(
  db: Db,
  deploymentId: string,
  afterTick: bigint | null,
  limit: number,
  maxBytes: number,
  withDeployment = false,
  floor: LogLevelFloor | null = null,
): Promise<{ page: LogPage; deployment: { deployment: Deployment; organizationId: string } | null } | null> {
  const after = afterTick ?? -1n;
  const statement = PAGE_STATEMENTS.get(`${withDeployment}:${floor}`)!;
  const { rows } = await db
    .raw<{ rows: PageRow[] }>(statement.sql, [after.toString(), limit, after.toString(), limit, maxBytes, deploymentId])
    .options({ name: statement.name });
  if (rows.length === 0) return null;
  const entryRows = rows.filter((row) => row.src === 'e');
  const chunkRows = rows.filter((row) => row.src === 'c');
  const deploymentRow = rows.find((row) => row.src === 'd');
  const deploymentJson = deploymentRow && (JSON.parse(deploymentRow.data) as Record<string, unknown>);
  const deployment = deploymentJson
    ? {
        deployment: deploymentFromJson(deploymentJson),
        organizationId: deploymentJson.workspace_organization_id as string,
      }
    : null;
  // Items are only known up to the last one read of a source that has more: nothing past that
  // may be returned (a later page would otherwise skip what lies between).
  let boundary: bigint | null = null;
  if (entryRows.length === limit) boundary = BigInt(entryRows.at(-1)!.tick);
  const headRows = Number(chunkRows[0]?.head_rows ?? 0);
  if (chunkRows.length > 0 && (headRows === CHUNK_HEAD || chunkRows.length < headRows)) {
    const last = BigInt(chunkRows.at(-1)!.last_tick);
    if (boundary === null || last < boundary) boundary = last;
  }
  const merged = [...entryRows.map(toEntry), ...chunkRows.flatMap((row) => explodeChunk(deploymentId, row, after))];
  merged.sort((a, b) => (a.tick < b.tick ? -1 : a.tick > b.tick ? 1 : 0));
  const levels = floor === null ? null : LEVELS_FROM[floor];
  const page: LogEntry[] = [];
  let bytes = 0;
  let more = boundary !== null;
  let through: bigint | null = null;
  for (const entry of merged) {
    if (boundary !== null && entry.tick > boundary) break;
    // A chunk's Information lines, around its warnings.
    if (levels && !levels.has(entry.level)) {
      through = entry.tick;
      continue;
    }
    const cost = entry.data.length + ITEM_OVERHEAD_BYTES;
    if (page.length >= limit || (page.length > 0 && bytes + cost > maxBytes)) {
      more = true;
      break;
    }
    page.push(entry);
    bytes += cost;
    through = entry.tick;
  }
  return { page: { entries: page, more, through }, deployment };
}

/** A page is at most this many bytes of log items (at least one item, however long). */
export const MAX_LOG_PAGE_BYTES = 1024 * 1024;

/**
 * Where the last `lines` lines of a deployment's log begin, walking back from its last line:
 * entries (one line each) and chunks (line_count each, or their warnings with a floor) merged by
 * tick, newest first, until they add up to `lines`. It starts at a whole chunk, so a few more
 * lines than asked may follow. Reads the rows of those lines only (the merge of two index scans
 * stops at the first sum that is enough), and the counts of the rest (a few thousand chunk rows
 * for millions of lines).
 */
function tailStartSql(floor: LogLevelFloor | null): string {
  const only = floorSql(floor, 'l', 'c');
  return `
WITH d AS (SELECT id, last_log_tick FROM deployments WHERE id = ?),
spans AS (
  SELECT first_tick, last_tick, line_count FROM (
    (SELECT l.tick AS first_tick, l.tick AS last_tick, 1 AS line_count FROM deployment_logs l, d
     WHERE l.deployment_id = d.id AND l.tick <= d.last_log_tick${only.entries} ORDER BY l.tick DESC)
    UNION ALL
    (SELECT c.first_tick, c.last_tick, ${only.chunkLines} AS line_count FROM deployment_log_chunks c, d
     WHERE c.deployment_id = d.id AND c.last_tick <= d.last_log_tick${only.chunks} ORDER BY c.last_tick DESC)
  ) u ORDER BY last_tick DESC
), summed AS (
  SELECT first_tick, sum(line_count) OVER (ORDER BY last_tick DESC ROWS UNBOUNDED PRECEDING) AS lines FROM spans
)
SELECT
  (SELECT count(*) FROM deployment_logs l, d WHERE l.deployment_id = d.id AND l.tick <= d.last_log_tick${only.entries})
    + (SELECT coalesce(sum(${only.chunkLines}), 0) FROM deployment_log_chunks c, d
       WHERE c.deployment_id = d.id AND c.last_tick <= d.last_log_tick${only.chunks}) AS total,
  t.first_tick, t.lines
FROM (SELECT 1) one
LEFT JOIN LATERAL (SELECT first_tick, lines FROM summed WHERE lines >= ? LIMIT 1) t ON true`;
}
const TAIL_START_SQL = new Map(([null, 'Warning', 'Error'] as const).map((floor) => [floor, tailStartSql(floor)]));

/** The start of a log's tail: read lines strictly after `afterTick` (null: from the first); `earlierLines` precede it. */
export interface LogTail {
  afterTick: bigint | null;
  earlierLines: number;
}

export function deploymentLogsStore(db: Db) {
  return {
    /** Appends engine entries and updates the deployment's counts and last tick (see RECORD_SQL). */
    async append(deploymentId: string, entries: NewLogEntry[], now: Date): Promise<StoredEntry[]> {
      return (await record(db, deploymentId, [{ entries }], now)).stored;
    },
    /**
     * The retention policy's removal of one finished deployment's log: the one that completed
     * first before `cutoff` whose log is still there (null when none). Its lines go, `line` is
     * written in their place, and the deployment is marked; its row, status, counts and tasks stay.
     * Inside a transaction: the row stays locked until it ends, and replicas sweeping at the same
     * time skip it.
     */
    async removeOldestLogBefore(
      cutoff: Date,
      now: Date,
      line: NewLogEntry,
    ): Promise<{ deploymentId: string; removedLines: number } | null> {
      const found: { id: string } | undefined = await db('deployments')
        .first('id')
        .whereNull('logs_removed_at')
        .whereNotNull('completed_at')
        .where('completed_at', '<', cutoff)
        .whereIn('status', FINAL_STATUSES)
        .orderBy('completed_at')
        .forUpdate()
        .skipLocked();
      if (!found) return null;
      const { rows } = await db.raw(
        `WITH chunks AS (DELETE FROM deployment_log_chunks WHERE deployment_id = ? RETURNING line_count),
              entries AS (DELETE FROM deployment_logs WHERE deployment_id = ? RETURNING 1)
         SELECT (SELECT coalesce(sum(line_count), 0) FROM chunks)::int + (SELECT count(*) FROM entries)::int AS removed`,
        [found.id, found.id],
      );
      await record(db, found.id, [{ entries: [line] }], now);
      await db('deployments').where({ id: found.id }).update({ logs_removed_at: now });
      return { deploymentId: found.id, removedLines: rows[0].removed as number };
    },
    /**
     * Reports of one deployment — entries, agent chunks, task ends — in one statement (see
     * RECORD_SQL), ticked in the order given.
     */
    record(deploymentId: string, reports: readonly LogReport[], now: Date, lease?: RecordLease): Promise<RecordResult> {
      return record(db, deploymentId, reports, now, lease);
    },
    /**
     * record, resolving once the statement is sent: a transaction's COMMIT follows it at once. The
     * caller must await `answered` after the commit: when it fails, the COMMIT rolled all back.
     */
    sendRecord(
      deploymentId: string,
      reports: readonly LogReport[],
      now: Date,
      lease?: RecordLease,
    ): Promise<{ answered: Promise<RecordResult> }> {
      return sendRecord(db, deploymentId, reports, now, lease);
    },
    /**
     * Items with tick > afterTick, in tick order: at most `limit` of them and about `maxBytes`
     * (at least one), so a page of 4 KiB lines stays as small as one of short lines; `more`
     * says whether more lines follow already. With `floor`, the lines of that level and above only.
     */
    async readPage(
      deploymentId: string,
      afterTick: bigint | null,
      limit: number,
      maxBytes: number = MAX_LOG_PAGE_BYTES,
      floor: LogLevelFloor | null = null,
    ): Promise<LogPage> {
      return (
        (await readPage(db, deploymentId, afterTick, limit, maxBytes, false, floor))?.page ?? {
          entries: [],
          more: false,
          through: null,
        }
      );
    },
    /**
     * The deployment (with its workspace's organization) and readPage's page as of one instant,
     * in one statement: the lines stop at its LastLogDateTick, and a final status comes with every
     * line. Null when the deployment or its workspace is gone.
     */
    async readWithDeployment(
      deploymentId: string,
      afterTick: bigint | null,
      limit: number,
      maxBytes: number = MAX_LOG_PAGE_BYTES,
      floor: LogLevelFloor | null = null,
    ): Promise<{ deployment: Deployment; organizationId: string; page: LogPage } | null> {
      const read = await readPage(db, deploymentId, afterTick, limit, maxBytes, true, floor);
      return read?.deployment ? { ...read.deployment, page: read.page } : null;
    },
    /**
     * Where the last `lines` lines of the log begin (with `floor`, of the lines of that level and
     * above), and how many such lines come before them (tailStartSql).
     */
    async tailStart(deploymentId: string, lines: number, floor: LogLevelFloor | null = null): Promise<LogTail> {
      const { rows } = await db.raw<{
        rows: Array<{ total: string; first_tick: string | null; lines: string | null }>;
      }>(TAIL_START_SQL.get(floor)!, [deploymentId, lines]);
      const row = rows[0];
      if (!row?.first_tick || row.lines === null) return { afterTick: null, earlierLines: 0 };
      return { afterTick: BigInt(row.first_tick) - 1n, earlierLines: Number(row.total) - Number(row.lines) };
    },
    /** readPage's items alone. */
    async read(
      deploymentId: string,
      afterTick: bigint | null,
      limit: number,
      maxBytes: number = MAX_LOG_PAGE_BYTES,
    ): Promise<LogEntry[]> {
      return (await readPage(db, deploymentId, afterTick, limit, maxBytes))?.page.entries ?? [];
    },
  };
}
