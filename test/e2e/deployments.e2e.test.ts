/**
 * End to end: a control plane process and three real agent processes running real bash scripts,
 * driven over the public API. Runs on the embedded default (embedded PostgreSQL, in-process bus)
 * and on the real PostgreSQL with NATS JetStream.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  cleanup,
  startAgent,
  startControlPlane,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';
import { isAlive } from '../helpers/processes.ts';
import { E2E_MODES } from './modes.ts';

const SECRET = `s3cr3t-${randomBytes(4).toString('hex')}`;

describe.each(E2E_MODES)('deployments end to end on $name', (mode) => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  const machines: Record<string, string> = {};

  beforeAll(async () => {
    plane = await startControlPlane(await mode.options());
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    const ids = Object.values(workspace.environments);
    lifecycleId = workspace.defaultLifecycleId;
    for (const name of ['agent-c', 'agent-a', 'agent-b']) {
      const created = await client.post('/api/machine', { workspaceId, name, environmentIds: ids });
      expect(created.status, created.text).toBe(200);
      machines[name] = created.body.machineId;
      startAgent([plane.grpcAddress], created.body.registrationToken);
    }
    await waitFor(
      async () => {
        const list = await client.get('/api/machine', { workspaceId });
        return list.body.machines.filter((m: { status: string }) => m.status === 'Online').length === 3;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'three agents online' },
    );
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  let counter = 0;
  /** A project whose steps each run one bash script, on the Default Lifecycle (Staging → Production). */
  async function project(
    steps: Array<{ name: string; script: string }>,
    variables: Array<{ name: string; value: string; sensitive?: boolean }> = [],
  ) {
    const projectId = (
      await client.post('/api/project', {
        workspaceId,
        name: `E2E ${++counter} ${randomBytes(3).toString('hex')}`,
        lifecycleId,
      })
    ).body.projectId as string;
    for (const s of steps) {
      const template = await client.post('/api/step-template', {
        workspaceId,
        name: `tpl-${counter}-${s.name}-${randomBytes(3).toString('hex')}`,
        script: s.script,
        scriptLanguage: 'bash',
      });
      expect(template.status, template.text).toBe(200);
      const step = await client.post('/api/project/step', {
        projectId,
        name: s.name,
        stepTemplateId: template.body.stepTemplateId,
      });
      expect(step.status, step.text).toBe(200);
    }
    for (const v of variables) {
      const variable = await client.post('/api/project/variable', {
        projectId,
        name: v.name,
        variableType: v.sensitive ? 'Sensitive' : 'Text',
      });
      await client.post('/api/project/variable/value', { variableId: variable.body.variableId, theValue: v.value });
    }
    return projectId;
  }

  async function release(projectId: string, version = '1.0.0') {
    const created = await client.post('/api/release', { projectid: projectId, version });
    expect(created.status, created.text).toBe(200);
    return created.body.releaseId as string;
  }

  async function logsOf(
    deploymentId: string,
  ): Promise<
    Array<{ Data: string; LogLevel: string; CreatedUtcTick: string; ParentLogId: string | null; StepId: string | null }>
  > {
    return (await client.get('/api/deployment', { deploymentId, skipLogs: 'False' })).body.logs;
  }

  it('gates Production until Staging completes, then deploys and promotes with the scripts output and masked secrets', async () => {
    const projectId = await project(
      [
        {
          name: 'Greet',
          script:
            'echo "Hello #{Greeting} on #{CONTEXT.MachineName} in #{CONTEXT.EnvironmentName}"\necho "secret is #{Password}"\necho "warn line" >&2',
        },
      ],
      [
        { name: 'Greeting', value: 'World' },
        { name: 'Password', value: SECRET, sensitive: true },
      ],
    );
    const releaseId = await release(projectId);

    const early = await client.post('/api/release/promote', { projectId, environments: ['Production'] });
    expect(early.status).toBe(400);
    expect(early.body.error).toContain('Production');

    const deployed = await client.post('/api/release/deploy', {
      releaseId,
      environments: [{ environmentName: 'Staging' }],
    });
    expect(deployed.status, deployed.text).toBe(200);
    const [stagingId] = deployed.body.deploymentIds;
    const status = await waitForDeployment(client, stagingId);
    expect(status).toMatchObject({ Status: 'Completed', ErrorCount: 0, WarningCount: 3 });

    const logs = await logsOf(stagingId);
    for (const name of ['agent-a', 'agent-b', 'agent-c'])
      expect(logs.map((l) => l.Data)).toContain(`Hello World on ${name} in Staging`);
    expect(logs.filter((l) => l.Data === 'secret is ********')).toHaveLength(3);
    expect(JSON.stringify(logs)).not.toContain(SECRET);
    expect(logs.filter((l) => l.Data === 'warn line').every((l) => l.LogLevel === 'Warning')).toBe(true);
    const ticks = logs.map((l) => BigInt(l.CreatedUtcTick));
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(ticks[0]! > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(status.LastLogDateTick).toBe(logs.at(-1)!.CreatedUtcTick);

    const promoted = await client.post('/api/release/promote', { projectId, environmentName: 'Production' });
    expect(promoted.status, promoted.text).toBe(200);
    expect(promoted.body.deploymentIds).toEqual([promoted.body.deploymentId]);
    expect((await waitForDeployment(client, promoted.body.deploymentId)).Status).toBe('Completed');
    const productionLogs = await logsOf(promoted.body.deploymentId);
    expect(productionLogs.map((l) => l.Data)).toContain('Hello World on agent-a in Production');

    const list = await client.get('/api/deployment/list', { projectId });
    expect(
      list.body.deployments.map((d: { environmentName: string; status: string }) => [d.environmentName, d.status]),
    ).toEqual([
      ['Production', 'Completed'],
      ['Staging', 'Completed'],
    ]);
    const targets = await client.get('/api/deployment/targets', { deploymentId: stagingId });
    expect(
      targets.body.steps[0].targets.map((t: { machineName: string; status: string; exitCode: number }) => [
        t.machineName,
        t.status,
        t.exitCode,
      ]),
    ).toEqual([
      ['agent-a', 'Succeeded', 0],
      ['agent-b', 'Succeeded', 0],
      ['agent-c', 'Succeeded', 0],
    ]);
  }, 120_000);

  it('pages logs strictly after a tick and leaves them out with skipLogs', async () => {
    const projectId = await project([{ name: 'Count', script: 'for i in 1 2 3 4 5; do echo "line $i"; done' }]);
    const releaseId = await release(projectId);
    const [id] = (await client.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds;
    await waitForDeployment(client, id);
    const all = await logsOf(id);
    expect(all.length).toBeGreaterThan(10);
    const middle = all[4]!.CreatedUtcTick;
    const after = (await client.get('/api/deployment', { deploymentId: id, getLogsAfter: middle })).body.logs;
    expect(after.map((l: { CreatedUtcTick: string }) => l.CreatedUtcTick)).toEqual(
      all.slice(5).map((l) => l.CreatedUtcTick),
    );
    const last = all.at(-1)!.CreatedUtcTick;
    expect((await client.get('/api/deployment', { deploymentId: id, getLogsAfter: last })).body.logs).toEqual([]);
    expect((await client.get('/api/deployment', { deploymentId: id, getLogsAfter: '' })).body.logs).toHaveLength(
      all.length,
    );
    const skipped = await client.get('/api/deployment', { deploymentId: id, skipLogs: 'TRUE' });
    expect(skipped.body.logs).toEqual([]);
    expect(skipped.body.status.Status).toBe('Completed');
  }, 60_000);

  it('cancels a running sleep: the script is gone within 5 s and later steps never run', async () => {
    const projectId = await project([
      { name: 'Sleep', script: 'sleep 300 &\necho "sleeper=$!"\nwait' },
      { name: 'Never', script: 'echo never' },
    ]);
    const releaseId = await release(projectId);
    const [id] = (await client.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds;
    const pids = await waitFor(
      async () => {
        const lines = (await logsOf(id)).filter((l) => l.Data.startsWith('sleeper='));
        return lines.length === 3 ? lines.map((l) => Number(l.Data.slice('sleeper='.length))) : null;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(pids.every(isAlive)).toBe(true);
    const cancelledAt = Date.now();
    const cancel = await client.post('/api/deployment/cancel', { deploymentId: id });
    expect(cancel.status).toBe(200);
    // Waited for longer than the bound, so a slow cancel shows as its measured time, not a timeout.
    await waitFor(() => pids.every((pid) => !isAlive(pid)), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: 'sleep processes to be gone',
    });
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
    const status = await waitForDeployment(client, id);
    expect(status.Status).toBe('Cancelled');
    expect(status.CancellationRequestedDate).not.toBeNull();
    expect((await logsOf(id)).some((l) => l.Data === 'never')).toBe(false);
    expect((await client.post('/api/deployment/cancel', { deploymentId: id })).status).toBe(400);
  }, 90_000);

  it('skips excluded steps', async () => {
    const projectId = await project([
      { name: 'Keep', script: 'echo kept' },
      { name: 'Drop', script: 'echo dropped' },
    ]);
    const releaseId = await release(projectId);
    const [id] = (
      await client.post('/api/release/deploy', { releaseId, environments: ['Staging'], excludeStepNames: ['drop'] })
    ).body.deploymentIds;
    expect((await waitForDeployment(client, id)).Status).toBe('Completed');
    const data = (await logsOf(id)).map((l) => l.Data);
    expect(data.filter((d) => d === 'kept')).toHaveLength(3);
    expect(data).not.toContain('dropped');
  }, 60_000);

  it('fails the deployment on a non-zero exit and reports the exit code', async () => {
    const projectId = await project([{ name: 'Boom', script: 'echo "about to fail"\nexit 7' }]);
    const releaseId = await release(projectId);
    const [id] = (await client.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds;
    const status = await waitForDeployment(client, id);
    expect(status.Status).toBe('Failed');
    expect(status.ErrorCount).toBeGreaterThanOrEqual(3);
    const errors = (await logsOf(id)).filter((l) => l.LogLevel === 'Error').map((l) => l.Data);
    expect(errors.some((e) => e.includes('exit code 7'))).toBe(true);
  }, 60_000);

  it('waits for deploymentDateUnixMillis before running', async () => {
    const projectId = await project([{ name: 'When', script: 'date +%s%3N' }]);
    const releaseId = await release(projectId);
    const at = Date.now() + 3_000;
    const [id] = (
      await client.post('/api/release/deploy', { releaseId, environments: ['Staging'], deploymentDateUnixMillis: at })
    ).body.deploymentIds;
    // Every step's own clock reading (below) is the check: none ran before the scheduled time.
    expect((await waitForDeployment(client, id)).Status).toBe('Completed');
    const ran = (await logsOf(id)).filter((l) => /^\d{13}$/.test(l.Data)).map((l) => Number(l.Data));
    expect(ran).toHaveLength(3);
    expect(Math.min(...ran)).toBeGreaterThanOrEqual(at);
  }, 60_000);
});
