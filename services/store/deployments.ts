/**
 * Deployments: the engine's durable state (contract §5). Leases say which replica drives a
 * deployment; any replica may take over once a lease expires.
 */
import { ACTIVE_STATUSES, type DeploymentStatus, type Page, type Paged } from '../core/index.ts';
import { sendWithoutWaiting, type Db } from './db.ts';
import { pageOf } from './paging.ts';
import { taskFromJson, type DeploymentTask } from './deployment-tasks.ts';
import { freezeFromJson, type DeploymentFreeze } from './deployment-freezes.ts';
import { toEnvironment, type Environment, type EnvironmentRow } from './environments.ts';
import { jsonDate } from './json-rows.ts';

export interface Deployment {
  id: string;
  workspaceId: string;
  projectId: string;
  releaseId: string;
  environmentId: string;
  environmentName: string;
  status: DeploymentStatus;
  automatic: boolean;
  excludeStepNames: string[];
  machineMode: 'All' | 'Include' | 'Exclude';
  machineIds: string[];
  redownloadPackages: boolean;
  scheduledFor: Date | null;
  createdUtc: Date;
  startedUtc: Date | null;
  completedUtc: Date | null;
  cancellationRequestedUtc: Date | null;
  lastUpdateUtc: Date;
  lastAttemptUtc: Date | null;
  errorCount: number;
  warningCount: number;
  lastLogTick: bigint;
  changeTick: bigint;
  failureMessage: string | null;
  /** The account that asked for it; null for automatic deployments. */
  requestedBy: { id: string; name: string } | null;
  /** Stays Queued until the engine has checked its approvals and freezes (issue #15). */
  gated: boolean;
  /** Why a gated deployment waits, as the engine last found it (awaiting approval, frozen). */
  waitingReason: string | null;
  /** Approvals by distinct accounts it needs (the environment's setting when it was created). */
  requiredApprovals: number;
  /** Deployed during a freeze by an account allowed to: its reason. */
  freezeOverrideReason: string | null;
  /** A rollback: the release the environment was rolled back from. */
  rolledBackFromReleaseId: string | null;
}

export type NewDeployment = Pick<
  Deployment,
  | 'id'
  | 'workspaceId'
  | 'projectId'
  | 'releaseId'
  | 'environmentId'
  | 'environmentName'
  | 'automatic'
  | 'excludeStepNames'
  | 'machineMode'
  | 'machineIds'
  | 'redownloadPackages'
  | 'scheduledFor'
> &
  Partial<
    Pick<Deployment, 'requestedBy' | 'gated' | 'requiredApprovals' | 'freezeOverrideReason' | 'rolledBackFromReleaseId'>
  >;

interface DeploymentRow {
  id: string;
  workspace_id: string;
  project_id: string;
  release_id: string;
  environment_id: string;
  environment_name: string;
  status: DeploymentStatus;
  automatic: boolean;
  exclude_step_names: string[];
  machine_mode: Deployment['machineMode'];
  machine_ids: string[];
  redownload_packages: boolean;
  scheduled_for: Date | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  cancellation_requested_at: Date | null;
  last_update_at: Date;
  last_attempt_at: Date | null;
  error_count: number;
  warning_count: number;
  last_log_tick: string;
  change_tick: string;
  failure_message: string | null;
  lease_owner: string | null;
  lease_until: Date | null;
  requested_by_id: string | null;
  requested_by_name: string | null;
  gated: boolean;
  waiting_reason: string | null;
  required_approvals: number;
  freeze_override_reason: string | null;
  rolled_back_from_release_id: string | null;
}

/** Every column but `plan`: a plan grows with steps × machines and only getPlan needs it. */
const COLUMNS = [
  'id',
  'workspace_id',
  'project_id',
  'release_id',
  'environment_id',
  'environment_name',
  'status',
  'automatic',
  'exclude_step_names',
  'machine_mode',
  'machine_ids',
  'redownload_packages',
  'scheduled_for',
  'created_at',
  'started_at',
  'completed_at',
  'cancellation_requested_at',
  'last_update_at',
  'last_attempt_at',
  'error_count',
  'warning_count',
  'last_log_tick',
  'change_tick',
  'failure_message',
  'lease_owner',
  'lease_until',
  'requested_by_id',
  'requested_by_name',
  'gated',
  'waiting_reason',
  'required_approvals',
  'freeze_override_reason',
  'rolled_back_from_release_id',
] as const satisfies ReadonlyArray<keyof DeploymentRow>;

function toDeployment(row: DeploymentRow): Deployment {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    projectId: row.project_id,
    releaseId: row.release_id,
    environmentId: row.environment_id,
    environmentName: row.environment_name,
    status: row.status,
    automatic: row.automatic,
    excludeStepNames: row.exclude_step_names,
    machineMode: row.machine_mode,
    machineIds: row.machine_ids,
    redownloadPackages: row.redownload_packages,
    scheduledFor: row.scheduled_for,
    createdUtc: row.created_at,
    startedUtc: row.started_at,
    completedUtc: row.completed_at,
    cancellationRequestedUtc: row.cancellation_requested_at,
    lastUpdateUtc: row.last_update_at,
    lastAttemptUtc: row.last_attempt_at,
    errorCount: row.error_count,
    warningCount: row.warning_count,
    // pg returns int8 as text: convert exactly, never through Number.
    lastLogTick: BigInt(row.last_log_tick),
    changeTick: BigInt(row.change_tick),
    failureMessage: row.failure_message,
    requestedBy:
      row.requested_by_id === null
        ? null
        : { id: row.requested_by_id, name: row.requested_by_name ?? row.requested_by_id },
    gated: row.gated,
    waitingReason: row.waiting_reason,
    requiredApprovals: row.required_approvals,
    freezeOverrideReason: row.freeze_override_reason,
    rolledBackFromReleaseId: row.rolled_back_from_release_id,
  };
}

/** COLUMNS for row_to_json: int8 ticks as text (a JSON number would lose their low digits). */
export const DEPLOYMENT_JSON_COLUMNS = COLUMNS.map((column) =>
  column === 'last_log_tick' || column === 'change_tick' ? `${column}::text AS ${column}` : column,
).join(', ');

const JSON_DATES = [
  'scheduled_for',
  'created_at',
  'started_at',
  'completed_at',
  'cancellation_requested_at',
  'last_update_at',
  'last_attempt_at',
  'lease_until',
] as const satisfies ReadonlyArray<keyof DeploymentRow>;

/** A deployment read as JSON (DEPLOYMENT_JSON_COLUMNS): its timestamps come as text. */
export function deploymentFromJson(json: Record<string, unknown>): Deployment {
  const row = { ...json } as unknown as DeploymentRow;
  for (const column of JSON_DATES) (row as unknown as Record<string, Date | null>)[column] = jsonDate(json[column]);
  return toDeployment(row);
}

/** The gate columns of a new deployment: a gated one is looked at by the engine at once. */
function gateColumns(d: NewDeployment, now: Date | undefined, db: Db) {
  return {
    gated: d.gated ?? false,
    gate_recheck_at: d.gated ? (now ?? db.fn.now()) : null,
    required_approvals: d.requiredApprovals ?? 0,
    freeze_override_reason: d.freezeOverrideReason ?? null,
    rolled_back_from_release_id: d.rolledBackFromReleaseId ?? null,
  };
}

export interface DeploymentFilter {
  workspaceId?: string | undefined;
  projectId?: string | undefined;
  releaseId?: string | undefined;
  status?: DeploymentStatus | undefined;
  changedAfterTick?: bigint | undefined;
}

const NEXT_CHANGE = "nextval('deployment_change_seq')";

/** What deployments.update may set besides its change tick, in the order it sets them. */
const UPDATE_COLUMNS = ['status', 'started_at', 'completed_at', 'last_attempt_at', 'failure_message', 'plan'] as const;

/** The active statuses written into a prepared statement's text (prepared statements: store/db.ts). */
const ACTIVE_STATUS_LITERAL = `'{${ACTIVE_STATUSES.join(',')}}'::text[]`;

/** A release's deployments to one environment that Completed without errors, as progression sees them. */
export interface ReleaseCompletion {
  environmentId: string;
  status: 'Completed';
  errorCount: 0;
  /** The fewest among them. */
  warningCount: number;
}

export interface ReleaseHistory {
  completions: ReleaseCompletion[];
  /** Every environment the release was deployed to, whatever came of it. */
  deployedEnvironmentIds: string[];
  /** A rollback deployed it somewhere. */
  rolledBack: boolean;
}

/**
 * All lifecycle progression asks of a release's deployments (one `?`: the release): per
 * environment where one Completed without errors, the fewest warnings among those. One entry each,
 * whatever the number of redeployments: a release deployed a thousand times is read as cheaply as
 * one deployed once.
 */
const RELEASE_COMPLETIONS = `(SELECT json_object_agg(c.environment_id, c.fewest_warnings) FROM (
   SELECT environment_id, min(warning_count) AS fewest_warnings FROM deployments
   WHERE release_id = ? AND status = 'Completed' AND error_count = 0 GROUP BY environment_id) c)`;

function toCompletions(json: Record<string, number> | null): ReleaseCompletion[] {
  return Object.entries(json ?? {}).map(([environmentId, warningCount]) => ({
    environmentId,
    status: 'Completed',
    errorCount: 0,
    warningCount,
  }));
}

export function deploymentsStore(db: Db) {
  /** The first request's time is kept: asking again changes nothing but the change tick. */
  const cancellationRequested = (now: Date) => ({
    cancellation_requested_at: db.raw('coalesce(cancellation_requested_at, ?)', [now]),
    last_update_at: now,
    change_tick: db.raw(NEXT_CHANGE),
  });
  return {
    /**
     * `lock`: inside a transaction, the row stays locked until it ends. A transaction that will
     * both insert rows referencing the deployment (which take a key-share lock on it) and then
     * update it or append to its log (which lock it) takes this first: two such transactions
     * that each took the key-share lock first deadlock when both then want the row.
     */
    async get(id: string, options: { lock?: boolean } = {}): Promise<Deployment | null> {
      const query = db<DeploymentRow>('deployments')
        .where({ id })
        .first(...COLUMNS)
        .options({ name: options.lock ? 'gantry_deployment_locked_v1' : 'gantry_deployment_v1' });
      if (options.lock) void query.forUpdate();
      const row = await query;
      return row ? toDeployment(row) : null;
    },
    /** The deployment with its workspace's organization, in one read; null when either is gone. */
    async getWithOrganization(id: string): Promise<{ deployment: Deployment; organizationId: string } | null> {
      const row: (DeploymentRow & { workspace_organization_id: string }) | undefined = await db('deployments as d')
        .join('workspaces as w', 'w.id', 'd.workspace_id')
        .whereNull('w.deleted_at')
        .where('d.id', id)
        .first(...COLUMNS.map((column) => `d.${column}`), 'w.organization_id as workspace_organization_id')
        .options({ name: 'gantry_deployment_with_organization_v1' });
      return row ? { deployment: toDeployment(row), organizationId: row.workspace_organization_id } : null;
    },
    async insert(deployments: NewDeployment[], now?: Date): Promise<void> {
      if (deployments.length === 0) return;
      await db('deployments').insert(
        deployments.map((d) => ({
          id: d.id,
          workspace_id: d.workspaceId,
          project_id: d.projectId,
          release_id: d.releaseId,
          environment_id: d.environmentId,
          environment_name: d.environmentName,
          automatic: d.automatic,
          exclude_step_names: JSON.stringify(d.excludeStepNames),
          machine_mode: d.machineMode,
          machine_ids: JSON.stringify(d.machineIds),
          redownload_packages: d.redownloadPackages,
          scheduled_for: d.scheduledFor,
          requested_by_id: d.requestedBy?.id ?? null,
          requested_by_name: d.requestedBy?.name ?? null,
          ...gateColumns(d, now, db),
        })),
      );
    },
    /** Inserts an automatic deployment unless one already exists for that release and environment. */
    async insertAutomaticOnce(deployment: NewDeployment, now?: Date): Promise<boolean> {
      const rows = await db('deployments')
        .insert({
          id: deployment.id,
          workspace_id: deployment.workspaceId,
          project_id: deployment.projectId,
          release_id: deployment.releaseId,
          environment_id: deployment.environmentId,
          environment_name: deployment.environmentName,
          automatic: true,
          exclude_step_names: '[]',
          machine_mode: 'All',
          machine_ids: '[]',
          redownload_packages: false,
          ...gateColumns(deployment, now, db),
        })
        .onConflict(db.raw('(release_id, environment_id) where automatic'))
        .ignore()
        .returning('id');
      return rows.length > 0;
    },
    async list(filter: DeploymentFilter, page: Page): Promise<Paged<Deployment>> {
      const query = db<DeploymentRow>('deployments').select(...COLUMNS);
      if (filter.workspaceId) query.where({ workspace_id: filter.workspaceId });
      if (filter.projectId) query.where({ project_id: filter.projectId });
      if (filter.releaseId) query.where({ release_id: filter.releaseId });
      if (filter.status) query.where({ status: filter.status });
      if (filter.changedAfterTick !== undefined) query.where('change_tick', '>', filter.changedAfterTick.toString());
      return pageOf(
        query,
        page,
        [
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        toDeployment,
      );
    },
    async maxChangeTick(filter: Omit<DeploymentFilter, 'changedAfterTick' | 'status'>): Promise<bigint> {
      const query = db('deployments');
      if (filter.workspaceId) query.where({ workspace_id: filter.workspaceId });
      if (filter.projectId) query.where({ project_id: filter.projectId });
      if (filter.releaseId) query.where({ release_id: filter.releaseId });
      const [row] = await query.max({ m: 'change_tick' });
      return BigInt((row?.m as string | null) ?? 0);
    },
    /**
     * What lifecycle progression and automatic deployments ask of a release's deployments, in one
     * statement whose answer does not grow with them: per environment the fewest warnings among
     * those Completed without errors, the environments it was deployed to (any status), and
     * whether a rollback deployed it.
     */
    async releaseHistory(releaseId: string): Promise<ReleaseHistory> {
      const { rows } = await db.raw<{
        rows: Array<{ completions: Record<string, number> | null; environment_ids: string[]; rolled_back: boolean }>;
      }>(
        `SELECT ${RELEASE_COMPLETIONS} AS completions,
           ARRAY(SELECT DISTINCT environment_id FROM deployments WHERE release_id = ?) AS environment_ids,
           EXISTS (SELECT 1 FROM deployments WHERE release_id = ? AND rolled_back_from_release_id IS NOT NULL) AS rolled_back`,
        [releaseId, releaseId, releaseId],
      );
      const row = rows[0]!;
      return {
        completions: toCompletions(row.completions),
        deployedEnvironmentIds: row.environment_ids,
        rolledBack: row.rolled_back,
      };
    },
    /**
     * What a deploy request checks, in one statement (it runs inside the request's transaction,
     * where reads cannot go in parallel, and under load each round trip waits its turn on a busy
     * event loop): the workspace's environments (as environments.listAll), the release's
     * deployments' completions (as releaseHistory), the organization's limits, its active deployments (the
     * queue limit's count), the workspace's live freezes, and the approvals the lifecycle's
     * phases require per environment.
     */
    async requestFacts(
      workspaceId: string,
      releaseId: string,
      lifecycleId: string | null,
      now: Date,
    ): Promise<{
      environments: Environment[];
      /** What the release's deployments say of its progression (RELEASE_COMPLETIONS). */
      releaseCompletions: ReleaseCompletion[];
      maxQueuedDeployments: number;
      active: number;
      liveFreezes: DeploymentFreeze[];
      phaseApprovals: Map<string, number>;
    }> {
      const { rows } = await db
        .raw<{
          rows: Array<{
            environments: EnvironmentRow[] | null;
            completions: Record<string, number> | null;
            max_queued_deployments: number;
            active: string;
            freezes: Array<Record<string, unknown>> | null;
            approvals: Record<string, number> | null;
          }>;
        }>(
          `SELECT
           (SELECT json_agg(row_to_json(e) ORDER BY e.sort_order, e.name) FROM environments e
             WHERE e.workspace_id = w.id AND e.deleted_at IS NULL) AS environments,
           ${RELEASE_COMPLETIONS} AS completions,
           o.max_queued_deployments,
           (SELECT count(*) FROM deployments d JOIN workspaces dw ON dw.id = d.workspace_id
             WHERE dw.organization_id = o.id AND d.status = any(${ACTIVE_STATUS_LITERAL})) AS active,
           (SELECT json_agg(row_to_json(f) ORDER BY f.name) FROM deployment_freezes f
             WHERE f.workspace_id = w.id AND f.deleted_at IS NULL AND (f.recurrence_cron IS NOT NULL OR f.end_at > ?)) AS freezes,
           (SELECT json_object_agg(a.environment_id, a.required) FROM (
              SELECT pe.environment_id, max(pe.required_approvals)::int AS required
              FROM phase_environments pe JOIN lifecycle_phases p ON p.id = pe.phase_id
              WHERE p.lifecycle_id = ? AND pe.required_approvals IS NOT NULL GROUP BY pe.environment_id) a) AS approvals
         FROM workspaces w JOIN organizations o ON o.id = w.organization_id WHERE w.id = ?`,
          [releaseId, now, lifecycleId, workspaceId],
        )
        .options({ name: 'gantry_deployment_request_facts_v1' });
      const row = rows[0];
      if (!row) throw new Error(`Workspace ${workspaceId} has no organization`);
      return {
        environments: (row.environments ?? []).map(toEnvironment),
        releaseCompletions: toCompletions(row.completions),
        maxQueuedDeployments: row.max_queued_deployments,
        active: Number(row.active),
        liveFreezes: (row.freezes ?? []).map(freezeFromJson),
        phaseApprovals: new Map(Object.entries(row.approvals ?? {})),
      };
    },
    /**
     * Takes (or renews) the lease on an active deployment for `owner`; null when another replica
     * holds an unexpired lease or the deployment is final. Claiming a Queued deployment that is
     * due and not cancelled starts its validation in the same write (→ Validating), so the step
     * every deployment takes first costs no round trip of its own.
     */
    /**
     * Takes the deployment's lease (null: not active, or another replica holds it). `running`:
     * tasks the caller knows as Running; those that have ended since come back in `ended`, read in
     * the same statement (a refill then costs one round trip less).
     */
    async claim(
      id: string,
      owner: string,
      now: Date,
      leaseUntil: Date,
      running: readonly string[] = [],
    ): Promise<
      (Deployment & { previousLeaseOwner: string | null; advanceSeq: number; ended: DeploymentTask[] }) | null
    > {
      // A gated deployment is not due here: the engine checks its gate first (passGate).
      const due = `status = 'Queued' AND NOT gated AND cancellation_requested_at IS NULL AND (scheduled_for IS NULL OR scheduled_for <= ?)`;
      const [row]: Array<
        DeploymentRow & { previous_lease_owner: string | null; advance_seq: number; ended_tasks: unknown[] | null }
      > = await db('deployments')
        .where({ id })
        .whereIn('status', ACTIVE_STATUSES)
        .where((q) => {
          q.whereNull('lease_owner').orWhere('lease_owner', owner).orWhere('lease_until', '<', now);
        })
        .update({
          lease_owner: owner,
          lease_until: leaseUntil,
          advance_seq: db.raw('advance_seq + 1'),
          // SET expressions all see the row as it was, so each CASE tests the same old status.
          status: db.raw(`CASE WHEN ${due} THEN 'Validating' ELSE status END`, [now]),
          last_attempt_at: db.raw(`CASE WHEN ${due} THEN ?::timestamptz ELSE last_attempt_at END`, [now, now]),
          last_update_at: db.raw(`CASE WHEN ${due} THEN ?::timestamptz ELSE last_update_at END`, [now, now]),
          change_tick: db.raw(`CASE WHEN ${due} THEN ${NEXT_CHANGE} ELSE change_tick END`, [now]),
        })
        // A subquery in RETURNING reads the statement's snapshot: the lease holder before this
        // claim. Another replica's name there means its lease expired unreleased (a takeover).
        .returning([
          ...COLUMNS,
          'advance_seq',
          db.raw('(SELECT old.lease_owner FROM deployments old WHERE old.id = deployments.id) AS previous_lease_owner'),
          running.length === 0
            ? db.raw('NULL AS ended_tasks')
            : // By the tasks' IDs only: `IS TRUE` keeps an index from serving the rest (see RECORD_SQL).
              db.raw(
                `(SELECT json_agg(row_to_json(t)) FROM deployment_tasks t
                  WHERE t.id = any(?::text[]) AND (t.deployment_id = deployments.id AND t.status <> 'Running') IS TRUE)
                 AS ended_tasks`,
                [[...running]],
              ),
        ])
        .options({ name: running.length === 0 ? 'gantry_deployment_claim_v1' : 'gantry_deployment_claim_ended_v1' });
      return row
        ? {
            ...toDeployment(row),
            previousLeaseOwner: row.previous_lease_owner,
            advanceSeq: row.advance_seq,
            ended: (row.ended_tasks ?? []).map((task) => taskFromJson(task as Record<string, unknown>)),
          }
        : null;
    },
    /**
     * A gated Queued deployment whose gate is clear starts validating (what claim does for one
     * that is not gated). Null when it is no longer a Queued, gated, uncancelled deployment.
     */
    async passGate(id: string, now: Date): Promise<Deployment | null> {
      const [row]: DeploymentRow[] = await db('deployments')
        .where({ id, status: 'Queued', gated: true })
        .whereNull('cancellation_requested_at')
        .update({
          status: 'Validating',
          gated: false,
          gate_recheck_at: null,
          waiting_reason: null,
          last_attempt_at: now,
          last_update_at: now,
          change_tick: db.raw(NEXT_CHANGE),
        })
        .returning(COLUMNS);
      return row ? toDeployment(row) : null;
    },
    /**
     * Keeps a gated deployment waiting with its reason; the engine looks again at `recheckAt`
     * (null: when an approval or a freeze change asks). Pollers of /list see a changed reason.
     */
    async holdAtGate(id: string, reason: string, recheckAt: Date | null, now: Date): Promise<void> {
      await db('deployments')
        .where({ id, status: 'Queued', gated: true })
        .update({
          gate_recheck_at: recheckAt,
          waiting_reason: reason,
          last_update_at: db.raw(
            'CASE WHEN waiting_reason IS DISTINCT FROM ? THEN ?::timestamptz ELSE last_update_at END',
            [reason, now],
          ),
          change_tick: db.raw(`CASE WHEN waiting_reason IS DISTINCT FROM ? THEN ${NEXT_CHANGE} ELSE change_tick END`, [
            reason,
          ]),
        });
    },
    /** Asks the engine to look at these gated deployments again now (an approval came). */
    async recheckGates(ids: readonly string[], now: Date): Promise<void> {
      if (ids.length === 0) return;
      await db('deployments')
        .whereIn('id', ids)
        .where({ status: 'Queued', gated: true })
        .update({ gate_recheck_at: now });
    },
    /**
     * Every Queued deployment of the workspace passes the gate again (a freeze was made or
     * changed: one scheduled before it must wait if it falls due inside it). Returns their IDs.
     */
    async gateQueuedInWorkspace(workspaceId: string, now: Date): Promise<string[]> {
      const rows: Array<{ id: string }> = await db('deployments')
        .where({ workspace_id: workspaceId, status: 'Queued' })
        .whereNull('cancellation_requested_at')
        .update({ gated: true, gate_recheck_at: now })
        .returning('id');
      return rows.map((r) => r.id);
    },
    /**
     * What the deployments of one page wait for beyond their own row (issue #15), in two reads
     * whatever the page size: the running deployment of the same project and environment for each
     * AwaitingSlot one, and its position among the organization's AwaitingSlot deployments (the
     * order slots are offered in).
     */
    async slotWaits(
      deployments: ReadonlyArray<Pick<Deployment, 'id' | 'workspaceId' | 'projectId' | 'environmentId' | 'status'>>,
    ): Promise<Map<string, { runningDeploymentId: string | null; position: number }>> {
      const waiting = deployments.filter((d) => d.status === 'AwaitingSlot');
      const result = new Map<string, { runningDeploymentId: string | null; position: number }>();
      if (waiting.length === 0) return result;
      const pairs = waiting.map((d) => [d.projectId, d.environmentId]);
      const [running, positions] = await Promise.all([
        db('deployments')
          .where({ status: 'Running' })
          .whereIn(['project_id', 'environment_id'], pairs)
          .select('id', 'project_id', 'environment_id') as Promise<
          Array<{ id: string; project_id: string; environment_id: string }>
        >,
        db
          .with(
            'queue',
            db('deployments as d')
              .join('workspaces as w', 'w.id', 'd.workspace_id')
              .where('d.status', 'AwaitingSlot')
              .whereIn(
                'w.organization_id',
                db('workspaces')
                  .whereIn('id', [...new Set(waiting.map((d) => d.workspaceId))])
                  .select('organization_id'),
              )
              .select(
                'd.id',
                db.raw('row_number() over (partition by w.organization_id order by d.created_at, d.id) as position'),
              ),
          )
          .from('queue')
          .whereIn(
            'id',
            waiting.map((d) => d.id),
          )
          .select('id', 'position') as Promise<Array<{ id: string; position: string }>>,
      ]);
      const position = new Map(positions.map((p) => [p.id, Number(p.position)]));
      for (const d of waiting) {
        const blocker = running.find((r) => r.project_id === d.projectId && r.environment_id === d.environmentId);
        result.set(d.id, { runningDeploymentId: blocker?.id ?? null, position: position.get(d.id) ?? 0 });
      }
      return result;
    },
    /** The deployments of a project in an environment that started (ran), newest first: what rollback looks back through. */
    async listStartedInEnvironment(projectId: string, environmentId: string, limit: number): Promise<Deployment[]> {
      return (
        await db<DeploymentRow>('deployments')
          .select(...COLUMNS)
          .where({ project_id: projectId, environment_id: environmentId })
          .whereNotNull('started_at')
          .orderBy([
            { column: 'started_at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(limit)
      ).map(toDeployment);
    },
    async releaseLease(id: string, owner: string): Promise<void> {
      await db('deployments')
        .where({ id, lease_owner: owner })
        .update({ lease_owner: null, lease_until: null })
        .options({ name: 'gantry_deployment_release_lease_v1' });
    },
    /** Deployments waiting (queued, validating, awaiting a slot) and running now: the metrics gauge, one grouped read. */
    async countActive(): Promise<{ queued: number; running: number }> {
      const rows: Array<{ status: string; count: string }> = await db('deployments')
        .whereIn('status', ACTIVE_STATUSES)
        .groupBy('status')
        .select('status', db.raw('count(*) as count'));
      let queued = 0;
      let running = 0;
      for (const row of rows) {
        if (row.status === 'Running') running += Number(row.count);
        else queued += Number(row.count);
      }
      return { queued, running };
    },
    /** Active deployments nobody drives (no lease or an expired one) that are due now. */
    async findUnowned(now: Date, limit: number): Promise<string[]> {
      const rows = await db('deployments')
        .whereIn('status', ACTIVE_STATUSES)
        .where((q) => {
          q.whereNull('lease_until').orWhere('lease_until', '<', now);
        })
        .where((q) => {
          q.whereNull('scheduled_for').orWhere('scheduled_for', '<=', now);
        })
        // A deployment held at its gate is looked at again when its recheck time comes (a
        // freeze ends) or an approval sets it; not on every sweep.
        .where((q) => {
          q.whereNot('status', 'Queued')
            .orWhere('gated', false)
            .orWhereNotNull('cancellation_requested_at')
            .orWhere('gate_recheck_at', '<=', now);
        })
        .orderBy('created_at')
        .limit(limit)
        .select('id');
      return rows.map((r) => r.id as string);
    },
    /** Changes status (and timestamps); bumps the change tick so pollers of /list see it. Returns the row as updated. */
    async update(
      id: string,
      patch: Partial<{
        status: DeploymentStatus;
        startedUtc: Date;
        completedUtc: Date;
        lastAttemptUtc: Date;
        failureMessage: string;
        plan: unknown;
      }>,
      now: Date,
    ): Promise<Deployment | null> {
      const row: Record<string, unknown> = { last_update_at: now, change_tick: db.raw(NEXT_CHANGE) };
      // The columns set decide the text, so each set has its own name (a deployment's finish is
      // one), told by a bit per column: PostgreSQL keeps 63 bytes of a statement's name.
      let columnsSet = 0;
      const set = (column: (typeof UPDATE_COLUMNS)[number], value: unknown) => {
        if (value === undefined) return;
        row[column] = value;
        columnsSet |= 1 << UPDATE_COLUMNS.indexOf(column);
      };
      set('status', patch.status);
      set('started_at', patch.startedUtc);
      set('completed_at', patch.completedUtc);
      set('last_attempt_at', patch.lastAttemptUtc);
      set('failure_message', patch.failureMessage);
      set('plan', patch.plan === undefined ? undefined : JSON.stringify(patch.plan));
      const [updated] = await db<DeploymentRow>('deployments')
        .where({ id })
        .update(row)
        .returning(COLUMNS)
        .options({ name: `gantry_deployment_update_v1_${columnsSet}` });
      return updated ? toDeployment(updated) : null;
    },
    async getPlan(id: string): Promise<unknown> {
      const row = await db('deployments').where({ id }).first('plan');
      return row?.plan ?? null;
    },
    /** The limits of the organization owning a workspace (contract §2 settings). */
    async organizationLimits(workspaceId: string): Promise<{
      organizationId: string;
      maxParallelMachines: number;
      maxConcurrentDeployments: number;
      maxQueuedDeployments: number;
    }> {
      const row = await db('workspaces as w')
        .join('organizations as o', 'o.id', 'w.organization_id')
        .where('w.id', workspaceId)
        .first('o.id', 'o.max_parallel_machines', 'o.max_concurrent_deployments', 'o.max_queued_deployments')
        .options({ name: 'gantry_organization_limits_v1' });
      if (!row) throw new Error(`Workspace ${workspaceId} has no organization`);
      return {
        organizationId: row.id,
        maxParallelMachines: row.max_parallel_machines,
        maxConcurrentDeployments: row.max_concurrent_deployments,
        maxQueuedDeployments: row.max_queued_deployments,
      };
    },
    /**
     * AwaitingSlot → Running when no other deployment of the same project runs in the same
     * environment and the organization is under maxConcurrentDeployments. The organization-wide
     * transaction lock makes the check and the change one step across replicas; called inside
     * `store.transaction`, it is part of that transaction. `organizationId`: the workspace's, when
     * the caller already knows it.
     */
    async tryStart(
      deployment: Pick<Deployment, 'id' | 'projectId' | 'environmentId' | 'workspaceId'>,
      now: Date,
      /** From Validating, the plan is stored by the same update (one statement when a slot is free). */
      options: { organizationId?: string; fromValidating?: { plan: unknown } } = {},
    ): Promise<boolean> {
      const { organizationId, fromValidating } = options;
      const attempt = async (trx: Db) => {
        const org = organizationId
          ? { organization_id: organizationId }
          : await trx('workspaces').where({ id: deployment.workspaceId }).first('organization_id');
        if (!org) return false;
        // Sent with the update behind it (a pipelined connection: one round trip for both). The
        // update runs once the lock is held; if taking it fails, so does the update.
        const { answered: locked } = await sendWithoutWaiting(
          trx
            .raw('select pg_advisory_xact_lock(hashtext(?))', [`gantry.start.${org.organization_id}`])
            .options({ name: 'gantry_organization_start_lock_v1' }),
        );
        // The slot checks are the update's own conditions.
        const updated = trx('deployments')
          .where({ id: deployment.id, status: fromValidating ? 'Validating' : 'AwaitingSlot' })
          .whereNotExists(
            trx('deployments')
              .where({ project_id: deployment.projectId, environment_id: deployment.environmentId })
              .whereRaw(`status = 'Running'`)
              .select(trx.raw('1')),
          )
          .whereRaw(
            `(SELECT count(*) FROM deployments d JOIN workspaces w ON w.id = d.workspace_id WHERE w.organization_id = ? AND d.status = 'Running')
             < (SELECT max_concurrent_deployments FROM organizations WHERE id = ?)`,
            [org.organization_id, org.organization_id],
          )
          .update({
            status: 'Running',
            started_at: now,
            last_attempt_at: now,
            last_update_at: now,
            change_tick: trx.raw(NEXT_CHANGE),
            ...(fromValidating ? { plan: JSON.stringify(fromValidating.plan) } : {}),
          })
          .options({ name: fromValidating ? 'gantry_deployment_start_validated_v1' : 'gantry_deployment_start_v1' });
        const [, count] = await Promise.all([locked, updated]);
        return count > 0;
      };
      // Inside the caller's transaction the lock lasts until it commits, with the caller's writes.
      return db.isTransaction ? attempt(db) : db.transaction(attempt);
    },
    /** Deployments waiting for a slot, oldest first (woken when a slot frees up). */
    async listAwaitingSlot(limit: number): Promise<string[]> {
      const rows = await db('deployments')
        .whereRaw(`status = 'AwaitingSlot'`)
        .orderBy('created_at')
        .limit(limit)
        .select('id')
        .options({ name: 'gantry_deployments_awaiting_slot_v1' });
      return rows.map((r) => r.id as string);
    },
    /** Marks cancellation requested on an active deployment; false when it is already final. */
    async requestCancellation(id: string, now: Date): Promise<boolean> {
      const count = await db('deployments')
        .where({ id })
        .whereIn('status', ACTIVE_STATUSES)
        .update(cancellationRequested(now));
      return count > 0;
    },
    /** Asks every active deployment of the project to cancel; returns their IDs. */
    async requestCancellationOfProject(projectId: string, now: Date): Promise<string[]> {
      const rows: Array<{ id: string }> = await db('deployments')
        .where({ project_id: projectId })
        .whereIn('status', ACTIVE_STATUSES)
        .update(cancellationRequested(now))
        .returning('id');
      return rows.map((row) => row.id);
    },
  };
}
