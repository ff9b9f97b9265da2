/**
 * store.deployments.requestFacts reads in ONE statement what a deploy request checks. Its
 * environments and the release's deployments come back as JSON inside that statement: they must
 * equal what environments.listAll and deployments.listForRelease read, field by field (timestamps
 * as Dates, int8 ticks exact, the same order). Deployments are made through the API so their rows
 * are the ones production writes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

beforeAll(async () => {
  t = await testApp();
});

describe('deployments.requestFacts', () => {
  it('reads the environments and the release deployments exactly as their own reads do', async () => {
    const workspaceId = t.mainWorkspaceId;
    const [lifecycle] = (await ok(t.admin.get('/api/lifecycle', { workspaceId }))).lifecycles;
    await ok(t.admin.post('/api/environment', { workspaceId, name: `Facts-${Date.now()}`, description: 'unused' }));
    const project = await ok(
      t.admin.post('/api/project', { workspaceId, name: `Facts-${Date.now()}`, lifecycleId: lifecycle.lifecycleId }),
    );
    const release = await ok(t.admin.post('/api/release', { projectId: project.projectId, version: '1.0.0' }));
    const empty = await t.deps.store.deployments.requestFacts(workspaceId, release.releaseId, null, new Date());
    expect(empty.releaseDeployments).toEqual([]);

    await ok(t.admin.post('/api/release/deploy', { releaseId: release.releaseId, environments: ['Staging'] }));
    await ok(
      t.admin.post('/api/release/deploy', {
        releaseId: release.releaseId,
        environments: ['Staging'],
        deploymentDateUnixMillis: Date.now() + 3_600_000,
        excludeStepNames: [],
      }),
    );
    const [cancelled] = (
      await ok(t.admin.post('/api/release/deploy', { releaseId: release.releaseId, environments: ['Staging'] }))
    ).deploymentIds;
    await ok(t.admin.post('/api/deployment/cancel', { deploymentId: cancelled }));
    // Ticks past 2^53, as real .NET ticks are: a JSON number would lose their low digits.
    await t.db('deployments').where({ id: cancelled }).update({ last_log_tick: '638999999999999999' });

    const facts = await t.deps.store.deployments.requestFacts(workspaceId, release.releaseId, null, new Date());
    const deployments = await t.deps.store.deployments.listForRelease(release.releaseId);
    expect(deployments).toHaveLength(3);
    expect(facts.releaseDeployments).toEqual(deployments);
    expect(facts.releaseDeployments.find((d) => d.id === cancelled)!.lastLogTick).toBe(638999999999999999n);
    expect(facts.releaseDeployments.some((d) => d.scheduledFor instanceof Date)).toBe(true);
    expect(facts.releaseDeployments.some((d) => d.cancellationRequestedUtc instanceof Date)).toBe(true);
    expect(facts.environments).toEqual(await t.deps.store.environments.listAll(workspaceId));
    expect(facts.environments.length).toBeGreaterThanOrEqual(3);
  });
});
