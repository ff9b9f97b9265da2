/**
 * GET /metrics across real deployments: a control plane process on PostgreSQL + NATS JetStream,
 * one real agent running bash, and the Prometheus text read back and parsed after each step.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

/** Prometheus text → 'name{a="x",b="y"}' (labels sorted) → value. */
function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    samples.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return samples;
}

describe('Prometheus metrics of a control plane, across real deployments', () => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  let staging: string;
  const projectName = `Tenant Secret Project ${randomBytes(3).toString('hex')}`;

  async function scrape(): Promise<{ text: string; get: (name: string, labels?: Record<string, string>) => number }> {
    const response = await fetch(plane.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    const samples = parseExposition(text);
    return {
      text,
      get: (name, labels = {}) => {
        const key = `${name}{${Object.entries(labels)
          .map(([k, v]) => `${k}="${v}"`)
          .sort()
          .join(',')}}`;
        return samples.get(key) ?? 0;
      },
    };
  }

  beforeAll(async () => {
    plane = await startControlPlane({
      databaseUrl: (await createTestDatabase()).url,
      natsUrl: 'nats://127.0.0.1:4222',
      natsPrefix: `e2e_${randomBytes(4).toString('hex')}`,
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    staging = workspace.environments.Staging!;
    await startMachines(plane, client, workspaceId, [{ name: 'metrics-agent', environmentIds: [staging] }]);
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  it('serves /metrics only on its own port, with the process metrics and one connected agent', async () => {
    const onApi = await fetch(`${plane.url}/metrics`);
    expect(onApi.status).not.toBe(200);
    expect(await onApi.text()).not.toContain('gantry_');
    // The machine reads Online from its registration, a moment before the gateway adopts its
    // session (startMachines waits for Online): the gauge may still read 0 then, never more than 1.
    const metrics = await waitFor(
      async () => {
        const scraped = await scrape();
        const connected = scraped.get('gantry_agents_connected');
        expect(connected).toBeLessThanOrEqual(1);
        return connected === 1 ? scraped : null;
      },
      { description: 'gantry_agents_connected to read 1' },
    );
    expect(metrics.get('gantry_agents_connected')).toBe(1);
    // One agent is far under the heartbeat cap: the base interval (the default agent-lost timeout's).
    expect(metrics.get('gantry_agent_heartbeat_interval_seconds')).toBe(15);
    expect(metrics.get('gantry_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(metrics.text).toContain('# TYPE gantry_http_request_duration_seconds histogram');
  });

  it('counts a deployment from queued to completed, its tasks, its log lines and the API calls that made it', async () => {
    const before = await scrape();
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'three lines', script: 'echo one; echo two; echo three; sleep 2' },
    ]);
    expect((await client.put('/api/project', { projectId, name: projectName, lifecycleId })).status).toBe(200);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging'], '7.7.7-tenant');

    // While the script sleeps, the gauge sees it running.
    await waitFor(async () => (await scrape()).get('gantry_deployments', { state: 'running' }) >= 1, {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: 'gantry_deployments{state="running"} to show the deployment',
    });
    expect((await waitForDeployment(client, deploymentId!)).Status).toBe('Completed');

    const after = await waitFor(
      async () => {
        const m = await scrape();
        return m.get('gantry_log_lines_ingested_total') - before.get('gantry_log_lines_ingested_total') >= 3 ? m : null;
      },
      { timeoutMs: 10_000, description: 'three log lines counted' },
    );
    const delta = (name: string, labels?: Record<string, string>) => after.get(name, labels) - before.get(name, labels);
    expect(delta('gantry_deployments_started_total')).toBe(1);
    expect(delta('gantry_deployments_finished_total', { status: 'Completed' })).toBe(1);
    expect(delta('gantry_deployments_finished_total', { status: 'Failed' })).toBe(0);
    expect(delta('gantry_deployment_duration_seconds_count', { status: 'Completed' })).toBe(1);
    // It slept 2 s, so its duration is in a bucket above 1 s and none at or below it.
    expect(delta('gantry_deployment_duration_seconds_bucket', { status: 'Completed', le: '1' })).toBe(0);
    expect(delta('gantry_deployment_duration_seconds_sum', { status: 'Completed' })).toBeGreaterThanOrEqual(2);
    expect(delta('gantry_deployment_queue_wait_seconds_count')).toBe(1);
    expect(delta('gantry_tasks_dispatched_total')).toBe(1);
    expect(delta('gantry_log_lines_ingested_total')).toBeGreaterThanOrEqual(3);
    expect(after.get('gantry_deployments', { state: 'running' })).toBe(0);
    expect(after.get('gantry_deployments', { state: 'queued' })).toBe(0);
    expect(
      delta('gantry_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/release/deploy',
        status: '200',
      }),
    ).toBe(1);
    expect(after.get('gantry_bus_errors_total', { operation: 'publish_work' })).toBe(0);
    expect(after.get('gantry_lease_takeovers_total')).toBe(0);
    // No label carries tenant text: not the project's name, not the version, not an id.
    expect(after.text).not.toContain(projectName);
    expect(after.text).not.toContain('7.7.7-tenant');
    expect(after.text).not.toContain(deploymentId);
  }, 90_000);

  it('counts a failed deployment by its final status, and unknown URLs under one route label', async () => {
    const before = await scrape();
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [{ name: 'fails', script: 'exit 3' }]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    expect((await waitForDeployment(client, deploymentId!)).Status).toBe('Failed');
    await fetch(`${plane.url}/api/no-such-thing/${randomBytes(4).toString('hex')}`);
    const after = await scrape();
    expect(
      after.get('gantry_deployments_finished_total', { status: 'Failed' }) -
        before.get('gantry_deployments_finished_total', { status: 'Failed' }),
    ).toBe(1);
    expect(
      after.get('gantry_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' }) -
        before.get('gantry_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBe(1);
  }, 60_000);
});
