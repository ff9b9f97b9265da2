/**
 * The statements a deployment runs on every step are server-side prepared (named `gantry_…`, the
 * why in services/store/db.ts): PostgreSQL then parses and plans them once per
 * connection. Two rules keep that safe. A name stands for one text: node-postgres refuses a name
 * reused with another, so each variant of a statement has its own. And a prepared statement lists
 * its columns: a `*` fails ("cached plan must not change result type") on a connection that
 * prepared it before a migration added a column, as during a rolling upgrade of the replicas.
 * Everything here runs on one connection, so each statement meets its own earlier preparation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { createDb, createStore, type Store } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { manualDeployment } from '../../helpers/deployment-row.ts';

let t: TestContext;
let oneConnection: ReturnType<typeof createDb>;
let store: Store;
let ids: { projectId: string; releaseId: string; deploymentId: string; environmentId: string };

/** The tables whose rows the named statements read or write (a column is added to each). */
const TABLES = [
  'deployments',
  'releases',
  'projects',
  'organizations',
  'workspaces',
  'deployment_tasks',
  'audit_events',
];

beforeAll(async () => {
  t = await testApp();
  const url = (t.db.client.config.connection as { connectionString: string }).connectionString;
  oneConnection = createDb(url, { poolMax: 1 });
  store = createStore(oneConnection);
  const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: `Prepared-${newId()}` });
  expect(project.status, project.text).toBe(200);
  const release = await t.admin.post('/api/release', { projectId: project.body.projectId, version: '1.0.0' });
  expect(release.status, release.text).toBe(200);
  const [environment] = await t.deps.store.environments.listAll(t.mainWorkspaceId);
  if (!environment) throw new Error('the workspace has no environment');
  const deploymentId = newId();
  await t.deps.store.deployments.insert([
    manualDeployment({
      id: deploymentId,
      workspaceId: t.mainWorkspaceId,
      projectId: project.body.projectId,
      releaseId: release.body.releaseId,
      environmentId: environment.id,
      environmentName: environment.name,
    }),
  ]);
  ids = {
    projectId: project.body.projectId,
    releaseId: release.body.releaseId,
    deploymentId,
    environmentId: environment.id,
  };
});

afterAll(async () => {
  await oneConnection?.destroy();
});

/** Every named statement of a deployment's path, each variant of it, with what it must answer. */
async function runEach(): Promise<void> {
  const now = new Date();
  const later = new Date(now.getTime() + 5_000);
  const { projectId, releaseId, deploymentId, environmentId } = ids;
  const facts = await store.deployments.requestFacts(t.mainWorkspaceId, releaseId, null, now);
  expect(facts.environments.map((e) => e.id)).toContain(environmentId);
  expect(facts.active).toBeGreaterThanOrEqual(1);
  const claimed = await store.deployments.claim(deploymentId, 'replica-a', now, later);
  expect(claimed?.id).toBe(deploymentId);
  const again = await store.deployments.claim(deploymentId, 'replica-a', now, later, [newId()]);
  expect(again?.ended).toEqual([]);
  await store.deployments.releaseLease(deploymentId, 'replica-a');
  expect((await store.deployments.getWithOrganization(deploymentId))?.deployment.id).toBe(deploymentId);
  expect((await store.deployments.organizationLimits(t.mainWorkspaceId)).maxParallelMachines).toBeGreaterThan(0);
  expect(Array.isArray(await store.deployments.listAwaitingSlot(50))).toBe(true);
  const deployment = { id: deploymentId, projectId, environmentId, workspaceId: t.mainWorkspaceId };
  await store
    .transaction(async (tx) => {
      // Each variant's statement runs: the first finds no AwaitingSlot deployment (the claim made it
      // Validating), the second may start it; the transaction, its lock and writes roll back below.
      expect(await tx.deployments.tryStart(deployment, now)).toBe(false);
      expect(typeof (await tx.deployments.tryStart(deployment, now, { fromValidating: { plan: {} } }))).toBe('boolean');
      expect((await tx.projects.getWithOrganization(projectId, { lock: true }))?.resource.id).toBe(projectId);
      expect((await tx.deployments.get(deploymentId, { lock: true }))?.id).toBe(deploymentId);
      const task = {
        deploymentId,
        stageIndex: 0,
        stepId: newId(),
        stepName: 'Probe',
        machineId: newId(),
        machineName: 'probe',
      };
      expect(await tx.deploymentTasks.insertManyCounted([{ id: newId(), ...task }])).toBe(1);
      expect(await tx.deploymentTasks.insertManyCounted([{ id: newId(), ...task }])).toBe(0);
      // Both variants of the update: a deployment's plan stored while it waits, and its finish.
      expect((await tx.deployments.update(deploymentId, { plan: {}, status: 'AwaitingSlot' }, now))?.status).toBe(
        'AwaitingSlot',
      );
      const finished = await tx.deployments.update(
        deploymentId,
        { status: 'Completed', completedUtc: later, lastAttemptUtc: later },
        later,
      );
      expect(finished?.completedUtc).toEqual(later);
      const { createdUtc: _, ...release } = (await tx.releases.get(releaseId))!;
      expect(await tx.releases.insertUnlessVersionTaken({ ...release, id: newId() })).toBeNull();
      const fresh = { ...release, id: newId(), version: '2.0.0' };
      expect(await tx.releases.insertUnlessVersionTaken(fresh)).toBeInstanceOf(Date);
      expect((await tx.releases.highest(projectId))?.version).toBe('2.0.0');
      // The audit insert's variants: the workspace read from a resource named, and given outright.
      const event = {
        organizationId: null,
        workspaceId: t.mainWorkspaceId,
        occurredUtc: now,
        accountId: null,
        accountName: 'probe',
        action: 'update',
        resourceType: 'probe',
        resourceId: null,
        before: undefined,
        after: { probe: true },
        address: null,
        requestId: null,
        status: 200,
      };
      await tx.auditEvents.insert({ ...event, id: newId() }, { projectId });
      await tx.auditEvents.insert({ ...event, id: newId() });
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  expect((await store.projects.getWithOrganization(projectId))?.resource.id).toBe(projectId);
  expect((await store.releases.get(releaseId))?.version).toBe('1.0.0');
  expect((await store.releases.getWithOrganization(releaseId))?.resource.version).toBe('1.0.0');
  expect((await store.releases.highest(projectId))?.id).toBe(releaseId);
  expect((await store.deployments.get(deploymentId))?.id).toBe(deploymentId);
}

class RolledBack extends Error {}

describe('prepared statements on a deployment’s path', () => {
  it('are prepared on the connection, one text per name, every variant run twice', async () => {
    await runEach();
    await runEach();
    const { rows } = await oneConnection.raw<{ rows: Array<{ name: string }> }>(
      `select name from pg_prepared_statements where name like 'gantry\\_%' order by name`,
    );
    expect(rows.map((r) => r.name)).toEqual(
      expect.arrayContaining([
        'gantry_deployment_claim_ended_v1',
        'gantry_deployment_claim_v1',
        'gantry_deployment_release_lease_v1',
        'gantry_deployment_request_facts_v1',
        'gantry_deployment_start_v1',
        'gantry_deployment_start_validated_v1',
        'gantry_deployment_with_organization_v1',
        'gantry_deployments_awaiting_slot_v1',
        'gantry_organization_limits_v1',
        'gantry_project_locked_v1',
        'gantry_project_v1',
        'gantry_release_v1',
        'gantry_release_with_organization_v1',
        'gantry_release_highest_v1',
        'gantry_release_insert_v1',
        'gantry_deployment_v1',
        'gantry_deployment_locked_v1',
        'gantry_deployment_tasks_insert_v1',
        'gantry_deployment_update_v1_13',
        'gantry_deployment_update_v1_33',
        'gantry_organization_start_lock_v1',
        'gantry_audit_insert_v1_',
        'gantry_audit_insert_v1_0',
      ]),
    );
  });

  it('go on answering on that connection after a migration adds a column to their tables', async () => {
    await runEach();
    for (const table of TABLES) await t.db.raw(`alter table ${table} add column prepared_probe integer`);
    try {
      await runEach();
    } finally {
      for (const table of TABLES) await t.db.raw(`alter table ${table} drop column prepared_probe`);
    }
  });
});
