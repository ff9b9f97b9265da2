/**
 * Enrollment keys (issue #17, a Gantry extension): a one-time token per machine does not fit an
 * autoscaling group or a compose file, where many identical machines start from one template. A
 * workspace admin creates a key bound to environments and tags (reusable, optionally expiring,
 * revocable, stored only as a hash); an agent started with it registers itself under its host name
 * (or the name it is given) and gets its own credential, exactly as a token would give.
 */
import {
  authorize,
  Capability,
  hashSecret,
  InvalidParameterError,
  newId,
  newSecret,
  unknownId,
  type Clock,
  type Principal,
} from '../core/index.ts';
import type { EnrollmentKey, Store } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';
import { requireTags } from './tags.ts';

/** The longest a key may live when it expires at all: a year. */
export const MAX_ENROLLMENT_KEY_HOURS = 24 * 366;
/** A name an agent may enroll under (the same characters a host name has, and dots and underscores). */
const MACHINE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function authorizeManage(principal: Principal, environmentIds: readonly string[]): void {
  authorize(principal, Capability.ManageWorkspace, environmentIds.length > 0 ? { environmentIds } : {});
}

async function requireEnvironments(deps: DomainDeps, workspaceId: string, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await deps.store.environments.getMany(workspaceId, unique);
  if (found.length !== unique.length) throw unknownId('environmentIds');
  return unique;
}

export async function createEnrollmentKey(
  deps: DomainDeps,
  principal: Principal,
  input: {
    workspaceId: string;
    name: string;
    environmentIds: string[];
    tagIds?: string[] | undefined;
    expiresInHours?: number | undefined;
  },
): Promise<{ key: EnrollmentKey; enrollmentKey: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const environmentIds = await requireEnvironments(deps, workspace.id, input.environmentIds);
  authorizeManage(principal, environmentIds);
  const tagIds = [...new Set(input.tagIds ?? [])];
  await requireTags(deps, workspace.id, tagIds);
  if (
    input.expiresInHours !== undefined &&
    !(input.expiresInHours > 0 && input.expiresInHours <= MAX_ENROLLMENT_KEY_HOURS)
  )
    throw new InvalidParameterError(`Invalid expiresInHours: from 1 to ${MAX_ENROLLMENT_KEY_HOURS}, or omit it`, [
      { property: 'expiresInHours', messages: [`must be from 1 to ${MAX_ENROLLMENT_KEY_HOURS}`] },
    ]);
  const now = deps.clock.now();
  const enrollmentKey = newSecret();
  const key: EnrollmentKey = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    environmentIds,
    tagIds,
    createdUtc: now,
    expiresUtc: input.expiresInHours === undefined ? null : new Date(now.getTime() + input.expiresInHours * 3600_000),
    revokedUtc: null,
    lastUsedUtc: null,
    useCount: 0,
  };
  await deps.store.enrollmentKeys.insert(key, hashSecret(enrollmentKey));
  return { key, enrollmentKey };
}

export async function listEnrollmentKeys(
  deps: DomainDeps,
  principal: Principal,
  workspaceId: string,
): Promise<EnrollmentKey[]> {
  const workspace = await visibleWorkspace(deps, principal, workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  return deps.store.enrollmentKeys.list(workspace.id);
}

/** Machines it enrolled keep their own credentials; no new machine can enroll with it. */
export async function revokeEnrollmentKey(deps: DomainDeps, principal: Principal, id: string): Promise<void> {
  const key = await visibleResource(deps, principal, deps.store.enrollmentKeys.get(id), 'enrollmentKeyId');
  authorizeManage(principal, key.environmentIds);
  await deps.store.enrollmentKeys.revoke(key.id, deps.clock.now());
}

/**
 * GANTRY_BOOTSTRAP_ENROLLMENT_KEY: a key the operator chose, in the given workspace and all its
 * environments, never expiring — so `docker compose up` needs no manual step. Created on the
 * first start that sees it; a revoked one stays revoked.
 */
export async function ensureBootstrapEnrollmentKey(deps: DomainDeps, enrollmentKey: string): Promise<void> {
  if (await deps.store.enrollmentKeys.findByHash(hashSecret(enrollmentKey))) return;
  const { organizationId } = await deps.store.seed();
  const workspace =
    (await deps.store.workspaces.findByName(organizationId, 'Main')) ??
    (await deps.store.workspaces.list(organizationId, null))[0];
  if (!workspace) throw new Error('No workspace for GANTRY_BOOTSTRAP_ENROLLMENT_KEY');
  const environmentIds = (await deps.store.environments.listAll(workspace.id)).map((e) => e.id);
  await deps.store.enrollmentKeys
    .insert(
      {
        id: newId(),
        workspaceId: workspace.id,
        name: 'GANTRY_BOOTSTRAP_ENROLLMENT_KEY',
        environmentIds,
        tagIds: [],
        createdUtc: deps.clock.now(),
        expiresUtc: null,
      },
      hashSecret(enrollmentKey),
    )
    // Two replicas starting together: the other one inserted it.
    .catch(async (error: unknown) => {
      if (!(await deps.store.enrollmentKeys.findByHash(hashSecret(enrollmentKey)))) throw error;
    });
}

export interface EnrollmentReport {
  readonly machineName: string;
  readonly hostname: string;
  readonly os: string;
  readonly agentVersion: string;
}

export type EnrollmentResult =
  | { ok: true; machineId: string; credential: string }
  | { ok: false; reason: 'refused' | 'invalid-name' | 'name-taken' };

/**
 * An agent enrolls itself with a key: a new machine in the key's workspace, environments and
 * tags, named as the agent says (its host name by default), with a credential of its own. The same
 * name enrolled by the same key again (a host rebuilt with an empty home) gets a new credential
 * on that machine; a name another machine holds is refused.
 */
export async function redeemEnrollmentKey(
  store: Store,
  clock: Clock,
  enrollmentKey: string,
  report: EnrollmentReport,
): Promise<EnrollmentResult> {
  const now = clock.now();
  const key = await store.enrollmentKeys.findUsableByHash(hashSecret(enrollmentKey), now);
  if (!key) return { ok: false, reason: 'refused' };
  const name = report.machineName || report.hostname;
  if (!MACHINE_NAME.test(name)) return { ok: false, reason: 'invalid-name' };
  const credential = newSecret();
  const info = {
    hostname: report.hostname.slice(0, 200) || undefined,
    os: report.os.slice(0, 200) || undefined,
    agentVersion: report.agentVersion.slice(0, 200) || undefined,
  };
  // Environments deleted since the key was made are left out; the rest still apply.
  const environmentIds = (await store.environments.getMany(key.workspaceId, key.environmentIds)).map((e) => e.id);
  try {
    const machineId = await withUniqueName('machineName', name, () =>
      store.transaction(async (tx) => {
        const existing = await tx.machines.findByName(key.workspaceId, name);
        if (existing && existing.enrollmentKeyId !== key.id) return null;
        await tx.enrollmentKeys.recordUse(key.id, now);
        if (existing) {
          await tx.machines.replaceCredential(existing.id, hashSecret(credential), info, now);
          return existing.id;
        }
        const id = newId();
        await tx.machines.insertEnrolled(
          { id, workspaceId: key.workspaceId, name, tagIds: key.tagIds, environmentIds },
          { enrollmentKeyId: key.id, credentialHash: hashSecret(credential), info, at: now },
        );
        return id;
      }),
    );
    return machineId ? { ok: true, machineId, credential } : { ok: false, reason: 'name-taken' };
  } catch (error) {
    if (error instanceof InvalidParameterError) return { ok: false, reason: 'name-taken' };
    throw error;
  }
}
