/**
 * Deploy and promote (spec §4.2–4.3, §7.3; contract §5): resolve the requested environments,
 * check permission per environment, lifecycle availability and the queue limit, then create one
 * deployment per environment and wake the engine.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  LimitExceededError,
  newId,
  unknownId,
  type Principal,
} from '../core/index.ts';
import type { Environment, NewLogEntry, Release, Store } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { idempotent, type RememberAnswer } from './idempotency.ts';
import { gateOfNew, refuseFrozen } from './deployment-gates.ts';
import { computeProgression, type ProgressionDeployment } from './lifecycle-progression.ts';
import { visibleProject } from './projects.ts';
import { visibleWithOrganization } from './scope.ts';

export type EnvironmentRequest =
  | string
  | {
      environmentName: string;
      machineMode?: 'All' | 'Include' | 'Exclude' | undefined;
      machineIds?: string[] | undefined;
    };

export interface TargetRequest {
  phaseName?: string | undefined;
  /** Obsolete single environment; still honoured (real clients send it). */
  environmentName?: string | undefined;
  environments?: EnvironmentRequest[] | undefined;
  redownloadPackages?: boolean | undefined;
  deploymentDateUnixMillis?: number | undefined;
  excludeStepNames?: string[] | undefined;
  /** Deploy anyway during a freeze (needs OverrideFreeze); logged with the deployment. Gantry extension. */
  freezeOverrideReason?: string | undefined;
}

interface ResolvedTarget {
  environment: Environment;
  machineMode: 'All' | 'Include' | 'Exclude';
  machineIds: string[];
}

/** The newest representable date plus a margin: anything later is a client error, not a schedule. */
const MAX_SCHEDULE_MS = Date.UTC(9999, 0, 1);

function resolveTargets(
  release: Release,
  workspaceEnvironments: Environment[],
  request: TargetRequest,
): ResolvedTarget[] {
  const byName = new Map(workspaceEnvironments.map((e) => [e.name.toLowerCase(), e]));
  const wanted: Array<{ name: string; machineMode: ResolvedTarget['machineMode']; machineIds: string[] }> = [];
  for (const item of request.environments ?? []) {
    if (typeof item === 'string') wanted.push({ name: item, machineMode: 'All', machineIds: [] });
    else
      wanted.push({
        name: item.environmentName,
        machineMode: item.machineMode ?? 'All',
        machineIds: item.machineIds ?? [],
      });
  }
  if (request.environmentName) wanted.push({ name: request.environmentName, machineMode: 'All', machineIds: [] });
  if (request.phaseName) {
    const phase = release.snapshot.lifecycle?.phases.find(
      (p) => p.name.toLowerCase() === request.phaseName!.toLowerCase(),
    );
    if (!phase) {
      throw new InvalidParameterError(`Phase '${request.phaseName}' is not in the release's lifecycle`, [
        { property: 'phaseName', messages: ['unknown phase'] },
      ]);
    }
    for (const e of phase.environments) wanted.push({ name: e.environmentName, machineMode: 'All', machineIds: [] });
  }
  if (wanted.length === 0) {
    throw new InvalidParameterError('Name the target: environments, environmentName or phaseName', [
      { property: 'environments', messages: ['required when phaseName is absent'] },
    ]);
  }
  const unknown = wanted.filter((w) => !byName.has(w.name.toLowerCase())).map((w) => w.name);
  if (unknown.length > 0) {
    throw new InvalidParameterError(`No matching environments: ${unknown.join(', ')}`, [
      { property: 'environments', messages: unknown.map((n) => `unknown environment '${n}'`) },
    ]);
  }
  const targets = new Map<string, ResolvedTarget>();
  for (const w of wanted) {
    const environment = byName.get(w.name.toLowerCase())!;
    if (!targets.has(environment.id))
      targets.set(environment.id, { environment, machineMode: w.machineMode, machineIds: [...new Set(w.machineIds)] });
  }
  return [...targets.values()];
}

function checkAvailability(
  release: Release,
  environments: Environment[],
  /** The release's deployments, or what of them counts for progression (requestFacts). */
  deployments: ProgressionDeployment[],
  targets: ResolvedTarget[],
): void {
  const progression = computeProgression(
    release.snapshot.lifecycle,
    environments.map((e) => ({ environmentId: e.id, name: e.name, enabled: e.enabled })),
    deployments,
  );
  const refused = targets
    .map((t) => progression.environments.find((e) => e.environmentId === t.environment.id))
    .filter((e) => e !== undefined && !e.available);
  if (refused.length > 0) {
    throw new InvalidParameterError(
      `Unavailable environments: ${refused.map((e) => `${e!.environmentName} (${e!.reason})`).join('; ')}`,
      refused.map((e) => ({ property: 'environments', messages: [`${e!.environmentName}: ${e!.reason}`] })),
    );
  }
}

async function checkMachines(deps: DomainDeps, workspaceId: string, targets: ResolvedTarget[]): Promise<void> {
  const wanted = [...new Set(targets.filter((t) => t.machineMode !== 'All').flatMap((t) => t.machineIds))];
  if (wanted.length === 0) return;
  // One read for every named machine (a request may name up to 1,000 per environment).
  const found = await deps.store.deploymentMachines.getMany(wanted);
  if (wanted.some((id) => found.get(id)?.workspaceId !== workspaceId)) throw unknownId('machineIds');
}

function checkExcludedSteps(release: Release, names: string[]): void {
  const known = new Set(release.snapshot.steps.map((s) => s.name.toLowerCase()));
  const unknown = names.filter((n) => !known.has(n.toLowerCase()));
  if (unknown.length > 0) {
    throw new InvalidParameterError(`excludeStepNames names steps the release does not have: ${unknown.join(', ')}`, [
      { property: 'excludeStepNames', messages: unknown.map((n) => `unknown step '${n}'`) },
    ]);
  }
}

function scheduleOf(millis: number | undefined): Date | null {
  if (millis === undefined) return null;
  if (!Number.isFinite(millis) || millis < 0 || millis > MAX_SCHEDULE_MS) {
    throw new InvalidParameterError('deploymentDateUnixMillis must be Unix epoch milliseconds', [
      { property: 'deploymentDateUnixMillis', messages: ['out of range'] },
    ]);
  }
  return new Date(millis);
}

export async function createDeployments(
  deps: DomainDeps,
  principal: Principal,
  release: Release,
  request: TargetRequest,
  /** Stores the request's answer in the transaction that creates the deployments (Idempotency-Key). */
  remember: (tx: Store, created: { ids: string[]; freezeOverride?: FreezeOverride }) => Promise<void>,
  /** A rollback: the release the environment is rolled back from (its lines say so). */
  rollback?: { fromReleaseId: string; fromVersion: string },
): Promise<{ ids: string[]; freezeOverride?: FreezeOverride }> {
  const scheduledFor = scheduleOf(request.deploymentDateUnixMillis);
  const now = deps.clock.now();
  const facts = await deps.store.deployments.requestFacts(
    release.workspaceId,
    release.id,
    release.snapshot.lifecycle?.lifecycleId ?? null,
    now,
  );
  const { environments, releaseCompletions, active, liveFreezes, phaseApprovals } = facts;
  const targets = resolveTargets(release, environments, request);
  authorize(principal, Capability.Deploy, {
    projectId: release.projectId,
    environmentIds: targets.map((t) => t.environment.id),
  });
  checkAvailability(release, environments, releaseCompletions, targets);
  await checkMachines(deps, release.workspaceId, targets);
  checkExcludedSteps(release, request.excludeStepNames ?? []);
  // A deployment scheduled for later is not refused: it waits if it falls due inside a freeze.
  const overridden =
    scheduledFor !== null && scheduledFor > now
      ? []
      : refuseFrozen(
          principal,
          liveFreezes,
          release.projectId,
          targets.map((t) => t.environment),
          now,
          request.freezeOverrideReason,
        );
  const overrideReason = overridden.length > 0 ? request.freezeOverrideReason!.trim() : null;

  if (active + targets.length > facts.maxQueuedDeployments) {
    throw new LimitExceededError(`Too many queued deployments: ${active} of ${facts.maxQueuedDeployments} are in use`, [
      { resource: 'queuedDeployments', limit: facts.maxQueuedDeployments, current: active },
    ]);
  }
  const rows = targets.map((t) => ({
    id: newId(),
    workspaceId: release.workspaceId,
    projectId: release.projectId,
    releaseId: release.id,
    environmentId: t.environment.id,
    environmentName: t.environment.name,
    automatic: false,
    excludeStepNames: request.excludeStepNames ?? [],
    machineMode: t.machineMode,
    machineIds: t.machineIds,
    redownloadPackages: request.redownloadPackages ?? false,
    scheduledFor,
    requestedBy: { id: principal.serviceAccountId, name: principal.name },
    ...gateOfNew(t.environment, liveFreezes, phaseApprovals),
    freezeOverrideReason: overrideReason,
    rolledBackFromReleaseId: rollback?.fromReleaseId ?? null,
  }));
  const ids = rows.map((r) => r.id);
  // In the answer too, so the audit event of the request holds the reason.
  const created = overrideReason
    ? { ids, freezeOverride: { reason: overrideReason, freezes: overridden.map((f) => f.name) } }
    : { ids };
  const lines: NewLogEntry[] = [];
  if (rollback)
    lines.push({
      level: 'Information',
      data: `Rollback by ${principal.name}: redeploying ${release.version} in place of ${rollback.fromVersion}`,
    });
  if (overrideReason)
    lines.push({
      level: 'Warning',
      data: `Deployment freeze ${overridden.map((f) => `'${f.name}'`).join(', ')} overridden by ${principal.name}: ${overrideReason}`,
    });
  await deps.store.transaction(async (tx) => {
    await tx.deployments.insert(rows, now);
    if (lines.length > 0) for (const id of ids) await tx.deploymentLogs.append(id, lines, now);
    await remember(tx, created);
  });
  // Committed: the answer is 200 whatever the bus does. Not awaited: with NATS restarting a
  // publish waits seconds for its ack, and a lost wake-up is swept up by the engine anyway.
  void deps.wakeDeployments?.(
    rows.map((row) =>
      // One due now starts validating at its first claim: the engine reads what that needs with it.
      row.gated || row.scheduledFor !== null
        ? row.id
        : {
            deploymentId: row.id,
            releaseId: row.releaseId,
            workspaceId: row.workspaceId,
            environmentId: row.environmentId,
          },
    ),
  );
  return created;
}

/** A deployment made during a freeze by an account allowed to: which freezes, and why. */
export interface FreezeOverride {
  reason: string;
  freezes: string[];
}

type PromoteAnswer = { deploymentId: string; deploymentIds: string[]; freezeOverride?: FreezeOverride };

export async function deployRelease(
  deps: DomainDeps,
  principal: Principal,
  input: { releaseId: string } & TargetRequest,
  options: { idempotencyKey?: string | undefined } = {},
): Promise<{ deploymentIds: string[]; freezeOverride?: FreezeOverride }> {
  const request = { operation: 'release.deploy', key: options.idempotencyKey, body: input };
  return idempotent(deps, principal, request, async (remember) => {
    const release = await visibleWithOrganization(
      principal,
      deps.store.releases.getWithOrganization(input.releaseId),
      'releaseId',
    );
    const answer = (c: { ids: string[]; freezeOverride?: FreezeOverride }) => ({
      deploymentIds: c.ids,
      ...(c.freezeOverride ? { freezeOverride: c.freezeOverride } : {}),
    });
    return answer(await createDeployments(deps, principal, release, input, (tx, c) => remember(tx, answer(c))));
  });
}

export async function promoteRelease(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; version?: string | undefined } & TargetRequest,
  options: { idempotencyKey?: string | undefined } = {},
): Promise<PromoteAnswer> {
  const request = { operation: 'release.promote', key: options.idempotencyKey, body: input };
  return idempotent(deps, principal, request, (remember) => promote(deps, principal, input, remember));
}

async function promote(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; version?: string | undefined } & TargetRequest,
  remember: RememberAnswer<PromoteAnswer>,
): Promise<PromoteAnswer> {
  // Exact match only (spec §9: `6.1` does not find `6.1.0`); without a version, the highest SemVer.
  const latest = input.version === undefined || input.version === '';
  // Read together (one round trip on the request's connection): the release is looked up by the
  // ID asked for, and used only once the project is known to be visible to the caller.
  const [, found] = await Promise.all([
    visibleProject(deps, principal, input.projectId),
    latest
      ? deps.store.releases.highest(input.projectId)
      : deps.store.releases.findByVersion(input.projectId, input.version!),
  ]);
  if (!found && latest)
    throw new InvalidParameterError('The project has no release to promote', [
      { property: 'projectId', messages: ['no release found'] },
    ]);
  if (!found)
    throw new InvalidParameterError(`No release '${input.version}' found in the project`, [
      { property: 'version', messages: ['no release found'] },
    ]);
  const answer = (c: { ids: string[]; freezeOverride?: FreezeOverride }): PromoteAnswer => ({
    deploymentId: c.ids[0]!,
    deploymentIds: c.ids,
    ...(c.freezeOverride ? { freezeOverride: c.freezeOverride } : {}),
  });
  return answer(await createDeployments(deps, principal, found, input, (tx, c) => remember(tx, answer(c))));
}
