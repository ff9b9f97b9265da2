/**
 * Builds a deployable world directly in the store for engine tests: machines with live agents,
 * a release with a hand-made snapshot, and deployments of it. Steps and groups are given as
 * snapshot fragments so each test states exactly the plan it exercises.
 */
import {
  newId,
  type ReleaseSnapshot,
  type SnapshotRollingGroup,
  type SnapshotStep,
} from '../../services/core/index.ts';
import type { TestContext } from './app.ts';
import { manualDeployment } from './deployment-row.ts';
import { group } from './plan-input.ts';

export async function environmentId(t: TestContext, name: string): Promise<string> {
  const row = await t
    .db('environments')
    .where({ workspace_id: t.mainWorkspaceId, name })
    .whereNull('deleted_at')
    .first('id');
  return row.id;
}

/** A machine in the environment whose agent counts as connected now. */
export async function onlineMachine(
  t: TestContext,
  name: string,
  envId: string,
  tagIds: string[] = [],
): Promise<string> {
  const created = await t.admin.post('/api/machine', {
    workspaceId: t.mainWorkspaceId,
    name,
    environmentIds: [envId],
    tagIds,
  });
  if (created.status !== 200) throw new Error(created.text);
  await t
    .db('machines')
    .where({ id: created.body.machineId })
    .update({ agent_credential_hash: `cred-${newId()}`, last_seen_at: new Date() });
  return created.body.machineId;
}

export function step(name: string, overrides: Partial<SnapshotStep> = {}): SnapshotStep {
  return {
    stepId: `step-${name}`,
    name,
    sortOrder: 0,
    errorAction: 'Stop',
    disabled: false,
    parallelMachines: null,
    environmentIds: [],
    machineIdFilter: [],
    machineTagFilter: [],
    rollingGroupId: null,
    properties: {},
    template: {
      stepTemplateId: 'tpl',
      name: 'Run a script',
      script: `echo ${name}`,
      scriptLanguage: 'bash',
      properties: [],
    },
    packageIds: [],
    ...overrides,
  };
}

export function rollingGroup(
  id: string,
  memberStepIds: string[],
  overrides: Partial<SnapshotRollingGroup> = {},
): SnapshotRollingGroup {
  // The planner input's defaults (plan-input.ts), plus the members a snapshot lists.
  return { ...group(id), memberStepIds, ...overrides };
}

interface SnapshotParts {
  steps: SnapshotStep[];
  rollingGroups?: SnapshotRollingGroup[];
  variables?: ReleaseSnapshot['variables'];
  lifecycle?: ReleaseSnapshot['lifecycle'];
}

/** A release snapshot of these parts (steps ordered as given; no channel, packages or modules). */
export function snapshotOf(
  parts: SnapshotParts,
  project: ReleaseSnapshot['project'] = { projectId: 'p1', name: 'Engine test', workspaceId: 'w1' },
): ReleaseSnapshot {
  return {
    v: 1,
    project,
    channel: null,
    lifecycle: parts.lifecycle ?? null,
    packages: [],
    steps: parts.steps.map((s, i) => ({ ...s, sortOrder: i + 1 })),
    rollingGroups: parts.rollingGroups ?? [],
    variables: parts.variables ?? [],
    scriptModules: [],
  };
}

export async function release(t: TestContext, parts: SnapshotParts): Promise<{ releaseId: string; projectId: string }> {
  const project = await t.admin.post('/api/project', {
    workspaceId: t.mainWorkspaceId,
    name: `Project ${newId().slice(0, 8)}`,
  });
  const projectId = project.body.projectId as string;
  const snapshot = snapshotOf(parts, { projectId, name: 'Engine test', workspaceId: t.mainWorkspaceId });
  const releaseId = newId();
  await t.deps.store.releases.insertUnlessVersionTaken({
    id: releaseId,
    workspaceId: t.mainWorkspaceId,
    projectId,
    version: '1.0.0',
    channelId: null,
    channelName: null,
    notes: 'notes',
    packageVersions: {},
    snapshot,
  });
  return { releaseId, projectId };
}

export async function deployment(
  t: TestContext,
  target: { releaseId: string; projectId: string },
  envId: string,
  options: { scheduledFor?: Date; excludeStepNames?: string[] } = {},
): Promise<string> {
  const env = await t.db('environments').where({ id: envId }).first('name');
  const id = newId();
  await t.deps.store.deployments.insert([
    manualDeployment({
      id,
      workspaceId: t.mainWorkspaceId,
      projectId: target.projectId,
      releaseId: target.releaseId,
      environmentId: envId,
      environmentName: env.name,
      excludeStepNames: options.excludeStepNames ?? [],
      scheduledFor: options.scheduledFor ?? null,
    }),
  ]);
  return id;
}

/**
 * `count` registered machines named m-1 … m-count in the main workspace and in `envId`, inserted
 * in two statements of arrays (as a fleet would have been registered over time).
 */
export async function fleetOf(t: TestContext, count: number, envId: string): Promise<string[]> {
  const machineIds = Array.from({ length: count }, () => newId());
  await t.db.raw(
    `insert into machines (id, workspace_id, name)
     select id, ?, 'm-' || ord from unnest(?::text[]) with ordinality as m(id, ord)`,
    [t.mainWorkspaceId, machineIds],
  );
  await t.db.raw(`insert into machine_environments (machine_id, environment_id) select unnest(?::text[]), ?`, [
    machineIds,
    envId,
  ]);
  return machineIds;
}

/** The tasks planning inserts for a deployment of one step ('Everywhere') to these machines (fleetOf's). */
export function everywhereTasks(deploymentId: string, machineIds: readonly string[]) {
  return machineIds.map((machineId, i) => ({
    id: newId(),
    deploymentId,
    stageIndex: 0,
    stepId: 'step-everywhere',
    stepName: 'Everywhere',
    machineId,
    machineName: `m-${i + 1}`,
  }));
}
