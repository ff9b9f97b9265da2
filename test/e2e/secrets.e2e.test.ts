/**
 * A Sensitive value never rests in plaintext: after a deployment whose scripts print and use
 * Sensitive values (also in a failing step's message), no API response, no line of the control
 * plane's or the agent's own log, no file anywhere in the agent's home and no file of the
 * embedded PostgreSQL's data folder holds one (they are encrypted at rest and masked in logs).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  startControlPlane,
  startedAgents,
  startMachines,
  tempDir,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

const PROJECT_SECRET = `proj-s3cr3t-${randomBytes(6).toString('hex')}`;
const WORKSPACE_SECRET = `ws-s3cr3t-${randomBytes(6).toString('hex')}`;
const SECRETS = [PROJECT_SECRET, WORKSPACE_SECRET];

/** Every regular file under `root` whose bytes contain one of the secrets. */
function filesHoldingSecrets(root: string): string[] {
  const found: string[] = [];
  const needles = SECRETS.map((secret) => Buffer.from(secret));
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (statSync(file).size > 256 * 1024 * 1024) continue;
    const bytes = readFileSync(file);
    if (needles.some((needle) => bytes.includes(needle))) found.push(path.relative(root, file));
  }
  return found;
}

function holdsSecret(text: string): boolean {
  return SECRETS.some((secret) => text.includes(secret));
}

describe('Sensitive values after a deployment that prints them', () => {
  let plane: ControlPlane;
  let client: Api;
  let dataDir: string;
  let deploymentId: string;
  let projectId: string;
  let releaseId: string;
  let workspaceId: string;

  beforeAll(async () => {
    dataDir = tempDir('gantry-e2e-secrets-');
    plane = await startControlPlane({ dataDir, env: { GANTRY_LOG_LEVEL: 'debug' } });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    await startMachines(plane, client, workspaceId, [
      { name: 'secret-agent', environmentIds: [workspace.environments.Staging!] },
    ]);
    const created = await bashProject(client, workspaceId, workspace.defaultLifecycleId, [
      {
        name: 'Use',
        script: [
          'echo "project secret: #{DbPassword}"',
          'echo "workspace secret: #{ApiToken}" >&2',
          'printf "%s" "#{DbPassword}" > used-by-the-script.txt',
          'export FROM_ENV="#{ApiToken}"',
        ].join('\n'),
      },
      {
        name: 'Fail',
        script: 'echo "failing with #{DbPassword}"\nexit 3',
        settings: { errorAction: 'ContinueOnError' },
      },
    ]);
    projectId = created.projectId;
    const variable = await client.post('/api/project/variable', {
      projectId,
      name: 'DbPassword',
      variableType: 'Sensitive',
    });
    await client.post('/api/project/variable/value', {
      variableId: variable.body.variableId,
      theValue: PROJECT_SECRET,
    });
    const shared = await client.post('/api/workspace-variable', {
      workspaceId,
      name: `ApiToken`,
      variableType: 'Sensitive',
    });
    await client.post('/api/workspace-variable/value', {
      variableId: shared.body.variableId,
      theValue: WORKSPACE_SECRET,
    });
    await client.post('/api/project/workspace-variable', { projectId, variableId: shared.body.variableId });
    const release = await client.post('/api/release', { projectId, version: '1.0.0' });
    releaseId = release.body.releaseId;
    const deployed = await client.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    deploymentId = deployed.body.deploymentIds[0];
    await waitForDeployment(client, deploymentId);
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  it('ran the scripts with the values, masked in every line and message', async () => {
    const logs = await logsOf(client, deploymentId);
    const text = logs.map((l) => l.Data);
    expect(text).toContain('project secret: ********');
    expect(text).toContain('workspace secret: ********');
    expect(text).toContain('failing with ********');
  });

  it('shows no Sensitive value in any API response about the deployment, release or variables', async () => {
    const responses = await Promise.all([
      client.get('/api/deployment', { deploymentId }),
      client.get('/api/deployment/targets', { deploymentId }),
      client.get('/api/deployment/list', { workspaceId }),
      client.get('/api/release/details', { releaseId }),
      client.get('/api/project/variables', { projectId }),
      client.get('/api/workspace-variable', { workspaceId }),
    ]);
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(holdsSecret(response.text)).toBe(false);
    }
  });

  it('writes no Sensitive value to the control plane log or the agent log', () => {
    expect(holdsSecret(plane.output())).toBe(false);
    expect(holdsSecret(startedAgents.get('secret-agent')!.output())).toBe(false);
  });

  it("keeps no Sensitive value in any file of the agent's home, except what the script itself wrote", () => {
    const home = startedAgents.get('secret-agent')!.home;
    expect(filesHoldingSecrets(home).filter((file) => !file.endsWith('used-by-the-script.txt'))).toEqual([]);
    // The scan does find a plaintext value where there is one (the script's own file).
    expect(filesHoldingSecrets(home).some((file) => file.endsWith('used-by-the-script.txt'))).toBe(true);
  });

  it('keeps no Sensitive value in plaintext in the database files (encrypted at rest)', () => {
    expect(filesHoldingSecrets(dataDir)).toEqual([]);
  });
});
