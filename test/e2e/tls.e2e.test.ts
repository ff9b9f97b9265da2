/**
 * Agents over TLS with real certificates, made by openssl for this run: the control plane serves
 * its agent gateway with GANTRY_GRPC_TLS_CERT_FILE / GANTRY_GRPC_TLS_KEY_FILE (a certificate for
 * 127.0.0.1 signed by a test CA). An agent that trusts that CA (GANTRY_AGENT_CA_FILE) registers
 * and runs a step; one that trusts another CA, or speaks plaintext, never registers.
 */
import { once } from 'node:events';
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates, type Certificates } from '../helpers/certificates.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/database.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startAgent,
  startControlPlane,
  tempDir,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

describe('agents over TLS (real certificates)', () => {
  let certificates: Certificates;
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let staging: string;
  let lifecycleId: string;

  beforeAll(async () => {
    certificates = makeCertificates(tempDir('gantry-e2e-tls-'));
    plane = await startControlPlane({
      env: { GANTRY_GRPC_TLS_CERT_FILE: certificates.cert, GANTRY_GRPC_TLS_KEY_FILE: certificates.key },
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    staging = workspace.environments.Staging!;
    lifecycleId = workspace.defaultLifecycleId;
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  async function machine(name: string): Promise<{ machineId: string; token: string }> {
    const created = await client.post('/api/machine', { workspaceId, name, environmentIds: [staging] });
    expect(created.status, created.text).toBe(200);
    return { machineId: created.body.machineId, token: created.body.registrationToken };
  }

  const statusOf = async (machineId: string) =>
    (
      (await client.get('/api/machine', { workspaceId })).body.machines as Array<{ machineId: string; status: string }>
    ).find((m) => m.machineId === machineId)?.status;

  it('registers an agent that trusts the CA, and runs its steps', async () => {
    const { machineId, token } = await machine('tls-agent');
    const agent = startAgent([plane.grpcAddress], token, { GANTRY_AGENT_CA_FILE: certificates.ca });
    await waitFor(async () => (await statusOf(machineId)) === 'Online', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the TLS agent online',
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${agent.output()}`);
    });
    // Dialled by IP, checked against the certificate's IP entry: no IP was sent as the TLS server
    // name (RFC 6066), which Node would report on the agent's stderr at every start (DEP0123).
    expect(plane.grpcAddress).toMatch(/^\d+\.\d+\.\d+\.\d+:\d+$/);
    expect(agent.output()).not.toContain('DEP0123');
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Over TLS', script: 'echo "hello over $Transport"' },
    ]);
    const variable = await client.post('/api/project/variable', { projectId, name: 'Transport', variableType: 'Text' });
    expect(
      (await client.post('/api/project/variable/value', { variableId: variable.body.variableId, theValue: 'TLS' }))
        .status,
    ).toBe(200);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    const done = await waitForDeployment(client, deploymentId!);
    expect(done.Status).toBe('Completed');
    expect((await logsOf(client, deploymentId!)).map((l) => l.Data)).toContain('hello over TLS');
  });

  it('never registers an agent that trusts another CA, nor one that speaks plaintext', async () => {
    const wrongCa = await machine('wrong-ca-agent');
    const plaintext = await machine('plaintext-agent');
    const agents = [
      startAgent([plane.grpcAddress], wrongCa.token, {
        GANTRY_AGENT_CA_FILE: certificates.otherCa,
        GANTRY_AGENT_LOG_LEVEL: 'info',
      }),
      startAgent([plane.grpcAddress], plaintext.token, { GANTRY_AGENT_INSECURE: '1', GANTRY_AGENT_LOG_LEVEL: 'info' }),
    ];
    // Both keep retrying (with backoff): three refused attempts each, counted in their own logs.
    const attempts = (agent: (typeof agents)[number]) =>
      agent.output().split('registration failed; retrying').length - 1;
    await waitFor(() => agents.every((agent) => attempts(agent) >= 3), {
      timeoutMs: 30_000,
      description: 'three failed attempts from both agents',
    });
    for (const { machineId } of [wrongCa, plaintext]) expect(await statusOf(machineId)).not.toBe('Online');
    for (const agent of agents) expect(agent.child.exitCode).toBeNull(); // still trying, as an agent should
  });
});

describe('TLS by default: the control plane’s own CA, pinned by agents', () => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let staging: string;

  beforeAll(async () => {
    // A fresh install: no certificate configured, nothing in the data folder.
    plane = await startControlPlane({ databaseUrl: (await createTestDatabase()).url, agentCa: 'own' });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    staging = workspace.environments.Staging!;
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  const statusOf = async (machineId: string) =>
    (
      (await client.get('/api/machine', { workspaceId })).body.machines as Array<{ machineId: string; status: string }>
    ).find((m) => m.machineId === machineId)?.status;

  it('creates its CA at first start (0600 in the data folder) and gives its fingerprint with every registration token', async () => {
    const file = path.join(plane.dataDir, 'agent-ca.pem');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const fingerprint = new X509Certificate(readFileSync(file)).fingerprint256;
    const created = await client.post('/api/machine', { workspaceId, name: 'pinned', environmentIds: [staging] });
    expect(created.status, created.text).toBe(200);
    expect(created.body.caFingerprint).toBe(fingerprint);
    const renewed = await client.post('/api/machine/registration-token', { machineId: created.body.machineId });
    expect(renewed.body.caFingerprint).toBe(fingerprint);
    const agent = startAgent([plane.grpcAddress], renewed.body.registrationToken, {
      GANTRY_AGENT_CA_FINGERPRINT: created.body.caFingerprint,
    });
    await waitFor(async () => (await statusOf(created.body.machineId)) === 'Online', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the pinned agent online',
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${agent.output()}`);
    });
    // Connected to an IP address over TLS: it sent no IP as the TLS server name (RFC 6066), which
    // Node would report on the agent's stderr at every start (DEP0123).
    expect(plane.grpcAddress).toMatch(/^\d+\.\d+\.\d+\.\d+:\d+$/);
    expect(agent.output()).not.toContain('DEP0123');
  });

  it('an agent pinned to another fingerprint refuses the server before sending its token', async () => {
    const created = await client.post('/api/machine', { workspaceId, name: 'mispinned', environmentIds: [staging] });
    const wrong = 'AB:'.repeat(31) + 'AB';
    const agent = startAgent([plane.grpcAddress], created.body.registrationToken, {
      GANTRY_AGENT_CA_FINGERPRINT: wrong,
    });
    const [exitCode] = (await once(agent.child, 'exit')) as [number | null];
    expect(exitCode).toBe(1);
    expect(agent.output()).toMatch(/none is the pinned CA (ab){32} .*Refusing to connect/);
    // The token never left the agent: an agent pinned to the right CA still registers with it.
    const right = startAgent([plane.grpcAddress], created.body.registrationToken, {
      GANTRY_AGENT_CA_FINGERPRINT: created.body.caFingerprint,
    });
    await waitFor(async () => (await statusOf(created.body.machineId)) === 'Online', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the rightly pinned agent online',
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${right.output()}`);
    });
  });

  it('serves plaintext only with GANTRY_GRPC_INSECURE=1, warning at every start', async () => {
    const warning = /GANTRY_GRPC_INSECURE=1: the agent gateway serves plaintext/;
    const databaseUrl = (await createTestDatabase()).url;
    const first = await startControlPlane({ databaseUrl, env: { GANTRY_GRPC_INSECURE: '1' } });
    expect(first.output()).toMatch(warning);
    const created = await api(first.url).post('/api/machine', {
      workspaceId: (await workspaceOf(api(first.url))).workspaceId,
      name: 'plaintext',
    });
    expect(created.body.caFingerprint).toBeNull();
    first.child.kill('SIGTERM');
    await once(first.child, 'exit');
    const again = await startControlPlane({ databaseUrl, dataDir: first.dataDir, env: { GANTRY_GRPC_INSECURE: '1' } });
    expect(again.output()).toMatch(warning);
    expect(plane.output()).not.toMatch(warning);
  });
});
