/**
 * store.deployments.requestFacts reads in ONE statement what a deploy request checks. Its
 * environments come back as JSON inside that statement: they must equal what
 * environments.listAll reads, field by field. Of the release's deployments it reads only what
 * lifecycle progression asks of them (per environment, the fewest warnings among those Completed
 * without errors), so a release redeployed many times costs no more to deploy again: progression
 * over that summary must be progression over every deployment. releaseHistory reads the same
 * summary for release details and automatic deployments, with where the release went and whether a
 * rollback deployed it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId, type SnapshotLifecycle } from '../../../services/core/index.ts';
import { computeProgression } from '../../../services/domain/lifecycle-progression.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { manualDeployment } from '../../helpers/deployment-row.ts';

let t: TestContext;

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

beforeAll(async () => {
  t = await testApp();
});

describe('deployments.requestFacts and releaseHistory', () => {
  it('reads nothing of a release never deployed, and a rollback once one deployed it', async () => {
    const project = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: `History-${Date.now()}` }),
    );
    const release = await ok(t.admin.post('/api/release', { projectId: project.projectId, version: '1.0.0' }));
    expect(await t.deps.store.deployments.releaseHistory(release.releaseId)).toEqual({
      completions: [],
      deployedEnvironmentIds: [],
      rolledBack: false,
    });
    const [environment] = await t.deps.store.environments.listAll(t.mainWorkspaceId);
    if (!environment) throw new Error('the workspace has no environment');
    const deployment = manualDeployment({
      id: newId(),
      workspaceId: t.mainWorkspaceId,
      projectId: project.projectId,
      releaseId: release.releaseId,
      environmentId: environment.id,
      environmentName: environment.name,
    });
    await t.deps.store.deployments.insert([{ ...deployment, rolledBackFromReleaseId: release.releaseId }]);
    expect(await t.deps.store.deployments.releaseHistory(release.releaseId)).toEqual({
      completions: [],
      deployedEnvironmentIds: [environment.id],
      rolledBack: true,
    });
  });

  it('reads the environments exactly as their own read does', async () => {
    const workspaceId = t.mainWorkspaceId;
    await ok(t.admin.post('/api/environment', { workspaceId, name: `Facts-${Date.now()}`, description: 'unused' }));
    const project = await ok(t.admin.post('/api/project', { workspaceId, name: `Facts-${Date.now()}` }));
    const release = await ok(t.admin.post('/api/release', { projectId: project.projectId, version: '1.0.0' }));
    const facts = await t.deps.store.deployments.requestFacts(workspaceId, release.releaseId, null, new Date());
    expect(facts.releaseCompletions).toEqual([]);
    expect(facts.environments).toEqual(await t.deps.store.environments.listAll(workspaceId));
    expect(facts.environments.length).toBeGreaterThanOrEqual(3);
  });

  it("reads of the release's deployments, per environment, the fewest warnings among those Completed without errors: progression over it is progression over them all", async () => {
    const workspaceId = t.mainWorkspaceId;
    const project = await ok(t.admin.post('/api/project', { workspaceId, name: `Progress-${Date.now()}` }));
    const release = await ok(t.admin.post('/api/release', { projectId: project.projectId, version: '1.0.0' }));
    const environments = (await t.deps.store.environments.listAll(workspaceId)).slice(0, 3);
    const [a, b, c] = environments.map((e) => ({ environmentId: e.id, name: e.name, enabled: true }));
    if (!a || !b || !c) throw new Error('the workspace has fewer than three environments');
    // [environment, status, errors, warnings]: a has two clean-enough ones (fewest warnings 1) and
    // a failure, b only one with errors, c one without warnings among others.
    const made: Array<[typeof a, string, number, number]> = [
      [a, 'Completed', 0, 2],
      [a, 'Completed', 0, 1],
      [a, 'Failed', 3, 0],
      [b, 'Completed', 1, 0],
      [b, 'Cancelled', 0, 0],
      [c, 'Completed', 0, 4],
      [c, 'Completed', 0, 0],
      [c, 'Running', 0, 0],
    ];
    for (const [environment, status, errors, warnings] of made) {
      const id = newId();
      await t.deps.store.deployments.insert([
        manualDeployment({
          id,
          workspaceId,
          projectId: project.projectId,
          releaseId: release.releaseId,
          environmentId: environment.environmentId,
          environmentName: environment.name,
        }),
      ]);
      await t.db('deployments').where({ id }).update({ status, error_count: errors, warning_count: warnings });
    }

    const facts = await t.deps.store.deployments.requestFacts(workspaceId, release.releaseId, null, new Date());
    // Release details and automatic deployments read the same summary, with where it went.
    const history = await t.deps.store.deployments.releaseHistory(release.releaseId);
    expect(history.completions).toEqual(facts.releaseCompletions);
    expect(history.deployedEnvironmentIds.sort()).toEqual([a, b, c].map((e) => e.environmentId).sort());
    expect(history.rolledBack).toBe(false);
    const byEnvironment = (list: typeof facts.releaseCompletions) =>
      Object.fromEntries(list.map((d) => [d.environmentId, d.warningCount]));
    expect(byEnvironment(facts.releaseCompletions)).toEqual({ [a.environmentId]: 1, [c.environmentId]: 0 });
    expect(facts.releaseCompletions.every((d) => d.status === 'Completed' && d.errorCount === 0)).toBe(true);

    const { items: all } = await t.deps.store.deployments.list(
      { releaseId: release.releaseId },
      { skip: 0, take: 100 },
    );
    expect(all).toHaveLength(made.length);
    for (const errorMode of ['NoErrorsAllowWarnings', 'NoErrorsNoWarnings'] as const) {
      // Each environment its own phase, each needing the one before: the progression tells them apart.
      const lifecycle: SnapshotLifecycle = {
        lifecycleId: 'l',
        name: 'L',
        phases: [a, b, c].map((e, i) => ({
          phaseId: `p${i}`,
          name: `P${i}`,
          sortOrder: i,
          progressRequirement: 'AllMustComplete' as const,
          progressRequirementCount: 0,
          progressRequirementErrorMode: errorMode,
          environments: [{ environmentId: e.environmentId, environmentName: e.name, howToTrigger: 'Manual' as const }],
        })),
      };
      expect(computeProgression(lifecycle, [a, b, c], facts.releaseCompletions)).toEqual(
        computeProgression(lifecycle, [a, b, c], all),
      );
      expect(computeProgression(null, [a, b, c], facts.releaseCompletions)).toEqual(
        computeProgression(null, [a, b, c], all),
      );
    }
  });
});
