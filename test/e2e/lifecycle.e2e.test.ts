/**
 * End to end: lifecycle progression with real agents — automatic phase deployments (after an
 * earlier phase completes, and on release creation) and promotion to every environment of a phase.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  startControlPlane,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';
import { E2E_MODES } from './modes.ts';

const ENVIRONMENTS = ['LC Dev', 'LC Staging', 'LC Production', 'Prod East', 'Prod West'];
const AGENTS = ['lc-agent-1', 'lc-agent-2', 'lc-agent-3'];
const SCRIPT = 'echo "hello from #{CONTEXT.MachineName} in #{CONTEXT.EnvironmentName}"';

interface Listed {
  deploymentId: string;
  environmentName: string;
  status: string;
  automatic: boolean;
  createdUtc: string;
  completedUtc: string | null;
}

describe.each(E2E_MODES)('lifecycles end to end on $name (three agents)', (mode) => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  const environments: Record<string, string> = {};

  beforeAll(async () => {
    plane = await startControlPlane(await mode.options());
    client = api(plane.url);
    workspaceId = (await workspaceOf(client)).workspaceId;
    for (const name of ENVIRONMENTS) {
      const created = await client.post('/api/environment', { workspaceId, name });
      expect(created.status, created.text).toBe(200);
      environments[name] = created.body.environmentId;
    }
    await startMachines(
      plane,
      client,
      workspaceId,
      AGENTS.map((name) => ({ name, environmentIds: Object.values(environments) })),
    );
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  async function lifecycle(
    phases: Array<{ name: string; environments: Array<[string, 'Manual' | 'Automatic']> }>,
  ): Promise<string> {
    const created = await client.post('/api/lifecycle', {
      workspaceId,
      name: `LC ${Math.random().toString(16).slice(2, 8)}`,
      phases: phases.map((p) => ({
        name: p.name,
        environments: p.environments.map(([name, howToTrigger]) => ({
          environmentId: environments[name],
          howToTrigger,
        })),
      })),
    });
    expect(created.status, created.text).toBe(200);
    return created.body.lifecycleId;
  }

  async function listed(projectId: string): Promise<Listed[]> {
    const response = await client.get('/api/deployment/list', { projectId });
    expect(response.status, response.text).toBe(200);
    return response.body.deployments;
  }

  async function release(projectId: string): Promise<string> {
    const created = await client.post('/api/release', { projectId, version: '1.0.0' });
    expect(created.status, created.text).toBe(200);
    return created.body.releaseId;
  }

  const greetings = async (deploymentId: string) =>
    (await logsOf(client, deploymentId)).map((l) => l.Data).filter((d) => d.startsWith('hello from '));

  it('deploys an Automatic environment by itself once the earlier phase completes', async () => {
    const lifecycleId = await lifecycle([
      { name: 'Test', environments: [['LC Staging', 'Manual']] },
      { name: 'Live', environments: [['LC Production', 'Automatic']] },
    ]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [{ name: 'Greet', script: SCRIPT }]);
    const releaseId = await release(projectId);
    // A Manual first phase: creating the release deploys nothing.
    expect(await listed(projectId)).toEqual([]);

    const deployed = await client.post('/api/release/deploy', { releaseId, environments: ['LC Staging'] });
    expect(deployed.status, deployed.text).toBe(200);
    const [stagingId] = deployed.body.deploymentIds as string[];
    expect((await waitForDeployment(client, stagingId!, 30_000)).Status).toBe('Completed');

    const production = await waitFor(
      async () => (await listed(projectId)).find((d) => d.environmentName === 'LC Production'),
      {
        timeoutMs: 15_000,
        intervalMs: 200,
        description: 'the automatic Production deployment',
      },
    );
    expect(production.automatic).toBe(true);
    expect((await waitForDeployment(client, production.deploymentId, 30_000)).Status).toBe('Completed');
    expect((await greetings(production.deploymentId)).sort()).toEqual(
      AGENTS.map((a) => `hello from ${a} in LC Production`),
    );

    const all = await listed(projectId);
    expect(all.map((d) => [d.environmentName, d.status, d.automatic]).sort()).toEqual([
      ['LC Production', 'Completed', true],
      ['LC Staging', 'Completed', false],
    ]);
    // It was created only after Staging had completed.
    const staging = all.find((d) => d.environmentName === 'LC Staging')!;
    expect(Date.parse(all.find((d) => d.environmentName === 'LC Production')!.createdUtc)).toBeGreaterThanOrEqual(
      Date.parse(staging.completedUtc!),
    );
  }, 60_000);

  it('deploys an Automatic first phase when the release is created, and nothing Manual after it', async () => {
    const lifecycleId = await lifecycle([
      { name: 'Dev', environments: [['LC Dev', 'Automatic']] },
      { name: 'Test', environments: [['LC Staging', 'Manual']] },
    ]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [{ name: 'Greet', script: SCRIPT }]);
    await release(projectId);

    const dev = await waitFor(async () => (await listed(projectId)).find((d) => d.environmentName === 'LC Dev'), {
      timeoutMs: 15_000,
      intervalMs: 200,
      description: 'the automatic Dev deployment',
    });
    expect(dev.automatic).toBe(true);
    expect((await waitForDeployment(client, dev.deploymentId, 30_000)).Status).toBe('Completed');
    expect((await greetings(dev.deploymentId)).sort()).toEqual(AGENTS.map((a) => `hello from ${a} in LC Dev`));
    // The next phase is reached but Manual: no deployment appears for it.
    expect((await listed(projectId)).map((d) => d.environmentName)).toEqual(['LC Dev']);
  }, 60_000);

  it('promotes to a phase, deploying to every environment of it', async () => {
    const lifecycleId = await lifecycle([
      { name: 'Test', environments: [['LC Staging', 'Manual']] },
      {
        name: 'Prod',
        environments: [
          ['Prod East', 'Manual'],
          ['Prod West', 'Manual'],
        ],
      },
    ]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [{ name: 'Greet', script: SCRIPT }]);
    const releaseId = await release(projectId);

    const early = await client.post('/api/release/promote', { projectId, phaseName: 'Prod' });
    expect(early.status).toBe(400);
    expect(early.body.error).toContain('Prod East');

    const toTest = await client.post('/api/release/deploy', { releaseId, phaseName: 'Test' });
    expect(toTest.status, toTest.text).toBe(200);
    expect(toTest.body.deploymentIds).toHaveLength(1);
    expect((await waitForDeployment(client, toTest.body.deploymentIds[0], 30_000)).Status).toBe('Completed');

    const promoted = await client.post('/api/release/promote', { projectId, phaseName: 'Prod' });
    expect(promoted.status, promoted.text).toBe(200);
    const ids = promoted.body.deploymentIds as string[];
    expect(ids).toHaveLength(2);
    expect(ids).toContain(promoted.body.deploymentId);
    const statuses = await Promise.all(ids.map((id) => waitForDeployment(client, id, 30_000)));
    expect(statuses.map((s) => s.Status)).toEqual(['Completed', 'Completed']);

    const all = await listed(projectId);
    expect(
      all
        .filter((d) => ids.includes(d.deploymentId))
        .map((d) => d.environmentName)
        .sort(),
    ).toEqual(['Prod East', 'Prod West']);
    const lines = (await Promise.all(ids.map(greetings))).flat().sort();
    expect(lines).toEqual(
      AGENTS.flatMap((a) => [`hello from ${a} in Prod East`, `hello from ${a} in Prod West`]).sort(),
    );
  }, 60_000);
});
