/**
 * The audit log (issue #14): who changed what, when, from where — one event per change made
 * through the API, written in the change's own transaction (api/plugins/audit.ts runs the
 * request in one), and per sign-in attempt, failed ones too. Events hold the resource as the API
 * shows it before and after, with every secret removed again here (keys, tokens, passwords,
 * Sensitive values): the log is read by people who must not learn them from it.
 */
import {
  authorize,
  Capability,
  isWellFormedId,
  newId,
  toPage,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { AuditEvent } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleWorkspace } from './scope.ts';

/**
 * Property names whose values are credentials in any resource (matched without case, `_` and `-`),
 * or carry one inside: an install command holds its registration token or enrollment key.
 */
const SECRET_NAME =
  /(apikey|token|secret|password|passphrase|credential|connectionstring|privatekey|csrf|command)|key$/;
/** Bound on one stored snapshot: a before/after larger than this is replaced by its size. */
const MAX_SNAPSHOT_BYTES = 64 * 1024;

/** A copy of `value` without secrets: credential-named properties dropped, Sensitive variables' values dropped. */
export function withoutSecrets(value: unknown, depth = 0): unknown {
  if (depth > 20) return null;
  if (Array.isArray(value)) return value.map((item) => withoutSecrets(item, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const sensitive = Object.entries(record).some(
    ([key, v]) => /^(type|variabletype|valuetype)$/i.test(key) && v === 'Sensitive',
  );
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(record)) {
    const name = key.toLowerCase().replace(/[_-]/g, '');
    if (SECRET_NAME.test(name)) continue;
    if ((sensitive || record.isSensitive === true) && /^(thevalue|value|values)$/.test(name)) continue;
    out[key] = withoutSecrets(inner, depth + 1);
  }
  return out;
}

function bounded(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  const clean = withoutSecrets(value);
  const bytes = Buffer.byteLength(JSON.stringify(clean) ?? '');
  return bytes > MAX_SNAPSHOT_BYTES ? { omitted: `${bytes} bytes` } : clean;
}

export interface ChangeRecord {
  principal: Principal;
  action: string;
  resourceType: string;
  resourceId: string | null;
  /** IDs the request and its answer named (workspaceId, projectId, …): they place the event in a workspace. */
  ids: Record<string, string>;
  before: unknown;
  after: unknown;
  address: string | null;
  requestId: string | null;
  status: number;
}

/** Stores one change; call it inside the change's transaction (deps.store bound to it). */
export async function recordChange(deps: DomainDeps, change: ChangeRecord): Promise<void> {
  const { answered } = await sendChangeRecord(deps, change);
  await answered;
}

/**
 * As recordChange, as the last statement of the change's transaction: resolves once the insert is
 * sent, so the COMMIT follows it at once. The caller must await `answered` after the commit: when
 * it fails, the commit was a rollback and nothing of the change is stored.
 */
export async function sendChangeRecord(deps: DomainDeps, change: ChangeRecord): Promise<{ answered: Promise<void> }> {
  // The workspace: the one the change names, else the owner of a resource it names (found by the
  // store in the insert), else the account's own.
  const named = change.ids.workspaceId;
  const placedBy = named ? {} : Object.fromEntries(Object.entries(change.ids).filter(([, id]) => isWellFormedId(id)));
  return deps.store.auditEvents.sendInsert(
    {
      id: newId(),
      organizationId: change.principal.organizationId,
      workspaceId: named ?? change.principal.workspaceId,
      occurredUtc: deps.clock.now(),
      accountId: change.principal.serviceAccountId,
      accountName: change.principal.name,
      action: change.action,
      resourceType: change.resourceType,
      resourceId: change.resourceId,
      before: bounded(change.before),
      after: bounded(change.after),
      address: change.address,
      requestId: change.requestId,
      status: change.status,
    },
    placedBy,
  );
}

/**
 * A dashboard sign-in attempt (POST /api/session). A failed one names the account only when the
 * ID is well-formed, never the key; it belongs to that account's organization when it exists.
 */
export async function recordSignIn(
  deps: DomainDeps,
  attempt: { accountId: string; succeeded: boolean; address: string | null; requestId: string | null; status: number },
): Promise<void> {
  const accountId = isWellFormedId(attempt.accountId) ? attempt.accountId : null;
  const account = accountId ? await deps.store.serviceAccounts.get(accountId) : null;
  await deps.store.auditEvents.insert({
    id: newId(),
    organizationId: account?.organizationId ?? null,
    workspaceId: null,
    occurredUtc: deps.clock.now(),
    accountId,
    accountName: account?.name ?? null,
    action: attempt.succeeded ? 'sign-in' : 'sign-in-failed',
    resourceType: 'session',
    resourceId: null,
    before: null,
    after: null,
    address: attempt.address,
    requestId: attempt.requestId,
    status: attempt.status,
  });
}

export interface AuditQuery extends PageRequest {
  /** A workspace's events; omitted: the caller's workspace, or for an organization-wide Admin the events outside any workspace. */
  workspaceId?: string | undefined;
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  accountId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

/** GET /api/audit: newest first, scoped like every read (a workspace's events need View in it). */
export async function listAuditEvents(
  deps: DomainDeps,
  principal: Principal,
  query: AuditQuery,
): Promise<Paged<AuditEvent>> {
  const filter = {
    resourceType: query.resourceType,
    resourceId: query.resourceId,
    accountId: query.accountId,
    from: query.from,
    to: query.to,
  };
  // A workspace account asking for no workspace gets its own.
  const workspaceId = query.workspaceId ?? principal.workspaceId ?? undefined;
  if (workspaceId !== undefined) {
    const workspace = await visibleWorkspace(deps, principal, workspaceId);
    authorize(principal, Capability.View);
    return deps.store.auditEvents.list({ ...filter, workspaceId: workspace.id }, toPage(query));
  }
  // Service accounts, settings and sign-ins belong to no workspace: only the organization's Admins see them.
  authorize(principal, Capability.Admin);
  return deps.store.auditEvents.list({ ...filter, organizationId: principal.organizationId }, toPage(query));
}
