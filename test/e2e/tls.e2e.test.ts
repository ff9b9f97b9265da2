/**
 * Agents over TLS with real certificates, made by openssl for this run: the control plane serves
 * its agent gateway with GANTRY_GRPC_TLS_CERT_FILE / GANTRY_GRPC_TLS_KEY_FILE (a certificate for
 * 127.0.0.1 signed by a test CA). An agent that trusts that CA (GANTRY_AGENT_CA_FILE) registers
 * and runs a step; one that trusts another CA, or speaks plaintext, never registers.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
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

interface Certificates {
  ca: string;
  otherCa: string;
  cert: string;
  key: string;
}

/** A CA, a server certificate for 127.0.0.1 and localhost signed by it, and an unrelated CA. */
function makeCertificates(dir: string): Certificates {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Gantry test CA');
  openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    'other-ca.key',
    '-out',
    'other-ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Some other CA',
  );
  openssl('req', ...ecKey, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=gantry-control-plane');
  writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  );
  const file = (name: string) => path.join(dir, name);
  return { ca: file('ca.pem'), otherCa: file('other-ca.pem'), cert: file('server.pem'), key: file('server.key') };
}

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
      startAgent([plane.grpcAddress], plaintext.token, { GANTRY_AGENT_LOG_LEVEL: 'info' }),
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
