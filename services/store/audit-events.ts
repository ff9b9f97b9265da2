import type { Page, Paged } from '../core/index.ts';
import { sendWithoutWaiting, type Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface AuditEvent {
  id: string;
  organizationId: string | null;
  workspaceId: string | null;
  occurredUtc: Date;
  accountId: string | null;
  accountName: string | null;
  /** create, update, delete, deploy, promote, cancel, sign-in, sign-in-failed, … (domain/audit.ts). */
  action: string;
  /** The route's resource path, e.g. `project/step`. */
  resourceType: string;
  resourceId: string | null;
  /** The resource as the API showed it before and after (secrets already removed). */
  before: unknown;
  after: unknown;
  address: string | null;
  requestId: string | null;
  /** The HTTP status of the answer (a failed sign-in: 401). */
  status: number;
}

export interface AuditFilter {
  /** Exactly one scope: a workspace's events, or an organization's events outside any workspace. */
  workspaceId?: string | undefined;
  organizationId?: string | undefined;
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  accountId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

interface AuditRow {
  id: string;
  organization_id: string | null;
  workspace_id: string | null;
  occurred_at: Date;
  account_id: string | null;
  account_name: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  before: unknown;
  after: unknown;
  address: string | null;
  request_id: string | null;
  status: number;
}

function toEvent(row: AuditRow): AuditEvent {
  return {
    id: row.id,
    organizationId: row.organization_id,
    workspaceId: row.workspace_id,
    occurredUtc: row.occurred_at,
    accountId: row.account_id,
    accountName: row.account_name,
    action: row.action,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    before: row.before,
    after: row.after,
    address: row.address,
    requestId: row.request_id,
    status: row.status,
  };
}

const own = (table: string) => `(SELECT workspace_id FROM ${table} WHERE id = ?)`;
const ofProject = (table: string) =>
  `(SELECT p.workspace_id FROM ${table} x JOIN projects p ON p.id = x.project_id WHERE x.id = ?)`;

/**
 * Resources whose ID alone tells the workspace a change happened in: the property naming them and
 * how the workspace is read from it (one bind parameter), tried in this order. A project's parts
 * (a step, a channel, a rolling group) and a variable's value name only themselves in an update.
 */
const OWNER_TABLES: ReadonlyArray<readonly [string, string]> = [
  ['projectId', own('projects')],
  ['releaseId', own('releases')],
  ['deploymentId', own('deployments')],
  ['environmentId', own('environments')],
  ['machineId', own('machines')],
  ['lifecycleId', own('lifecycles')],
  ['tagId', own('tags')],
  ['feedId', own('feeds')],
  ['projectStepId', ofProject('project_steps')],
  ['channelId', ofProject('channels')],
  ['rollingGroupId', ofProject('rolling_groups')],
  ['stepTemplateId', own('step_templates')],
  ['variableId', own('variables')],
  [
    'variableValueId',
    '(SELECT v.workspace_id FROM variable_values x JOIN variables v ON v.id = x.variable_id WHERE x.id = ?)',
  ],
  ['scriptModuleId', own('script_modules')],
  ['cloudAccountId', own('cloud_accounts')],
  ['freezeId', own('deployment_freezes')],
  ['enrollmentKeyId', own('enrollment_keys')],
  [
    'phaseId',
    '(SELECT l.workspace_id FROM lifecycle_phases x JOIN lifecycles l ON l.id = x.lifecycle_id WHERE x.id = ?)',
  ],
  ['serviceAccountId', own('service_accounts')],
];

/** The insert of one event (`placedBy`: see the store's insert). */
function insertStatement(db: Db, event: AuditEvent, placedBy: Readonly<Record<string, string>>) {
  const owners = OWNER_TABLES.filter(([property]) => placedBy[property] !== undefined);
  const workspaceId =
    owners.length === 0
      ? event.workspaceId
      : db.raw(`coalesce(${owners.map(([, read]) => read).join(', ')}, ?::text)`, [
          ...owners.map(([property]) => placedBy[property]!),
          event.workspaceId,
        ]);
  // Server-side prepared (store/db.ts), a name for each set of owners read: they alone vary the
  // text (every column is always given, `?? null`: knex leaves an undefined one out).
  const ownersRead = owners.map((owner) => OWNER_TABLES.indexOf(owner).toString(36)).join('');
  return db('audit_events')
    .insert({
      id: event.id,
      organization_id: event.organizationId ?? null,
      workspace_id: workspaceId ?? null,
      occurred_at: event.occurredUtc,
      account_id: event.accountId ?? null,
      account_name: event.accountName ?? null,
      action: event.action,
      resource_type: event.resourceType,
      resource_id: event.resourceId ?? null,
      before: event.before === undefined ? null : JSON.stringify(event.before),
      after: event.after === undefined ? null : JSON.stringify(event.after),
      address: event.address ?? null,
      request_id: event.requestId ?? null,
      status: event.status,
    })
    .options({ name: `gantry_audit_insert_v1_${ownersRead}` });
}

export function auditEventsStore(db: Db) {
  return {
    /**
     * `placedBy`: IDs the change named (projectId, releaseId, …); the first that names a stored
     * resource of a kind in OWNER_TABLES (whatever its workspace) gives the event its workspace, read in the insert itself
     * (a round trip less inside every change's transaction); event.workspaceId is the fallback.
     */
    async insert(event: AuditEvent, placedBy: Readonly<Record<string, string>> = {}): Promise<void> {
      await insertStatement(db, event, placedBy);
    },
    /**
     * As insert, but resolves once the statement is sent (db.ts, sendWithoutWaiting): the change's
     * COMMIT then follows it without waiting a round trip for its answer, which `answered` gives.
     */
    sendInsert(
      event: AuditEvent,
      placedBy: Readonly<Record<string, string>> = {},
    ): Promise<{ answered: Promise<void> }> {
      return sendWithoutWaiting(insertStatement(db, event, placedBy));
    },
    /**
     * One event outside any workspace in every organization: a change to the whole installation
     * (a master key rotation), which each organization's Admins see. One statement whatever their number.
     */
    async insertForEveryOrganization(
      event: Omit<AuditEvent, 'id' | 'organizationId' | 'workspaceId' | 'resourceId' | 'before' | 'requestId'>,
    ): Promise<void> {
      await db.raw(
        `insert into audit_events (id, organization_id, workspace_id, occurred_at, account_id, account_name, action,
                                   resource_type, resource_id, before, after, address, request_id, status)
         select gen_random_uuid()::text, o.id, null, ?, ?, ?, ?, ?, null, null, ?::jsonb, ?, null, ?
           from organizations o`,
        [
          event.occurredUtc,
          event.accountId,
          event.accountName,
          event.action,
          event.resourceType,
          event.after === undefined ? null : JSON.stringify(event.after),
          event.address,
          event.status,
        ],
      );
    },
    /** Newest first. A workspace scope lists its events; an organization scope, those outside any workspace. */
    async list(filter: AuditFilter, page: Page): Promise<Paged<AuditEvent>> {
      const query = db<AuditRow>('audit_events');
      if (filter.workspaceId !== undefined) query.where({ workspace_id: filter.workspaceId });
      else query.whereNull('workspace_id').where({ organization_id: filter.organizationId ?? null });
      if (filter.resourceType !== undefined) query.where({ resource_type: filter.resourceType });
      if (filter.resourceId !== undefined) query.where({ resource_id: filter.resourceId });
      if (filter.accountId !== undefined) query.where({ account_id: filter.accountId });
      if (filter.from !== undefined) query.where('occurred_at', '>=', filter.from);
      if (filter.to !== undefined) query.where('occurred_at', '<', filter.to);
      return pageOf(
        query,
        page,
        [
          { column: 'occurred_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        toEvent,
      );
    },
  };
}
