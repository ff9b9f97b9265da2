/**
 * The gantry CLI as a process (the built single file) against a real control plane and a real
 * agent running real bash scripts: what a pipeline does, checked by exit code, by what it
 * printed and by the server's state. One control plane and agent serve the whole file.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/index.ts';
import { makeZip } from '../services/packages/archives.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  ADMIN,
  api,
  bashProject,
  cleanup,
  startAgent,
  startControlPlane,
  startMachines,
  tempDir,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from '../e2e/harness.ts';
import { printed, runCli } from './run-cli.ts';

const PACKAGE_PROPERTY = JSON.stringify([
  { Id: 'Pkg', Name: 'Package', ControlType: 'PackageSelector', DefaultValue: '' },
]);

let plane: ControlPlane;
let admin: Api;
let workspaceId: string;
let lifecycleId: string;
let environments: Record<string, string>;
let files: string;
/** A CI account limited to the Main workspace: sees one workspace, so --workspace is not needed. */
let ci: { id: string; key: string };
let env: Record<string, string>;

beforeAll(async () => {
  plane = await startControlPlane();
  admin = api(plane.url);
  ({ workspaceId, environments, defaultLifecycleId: lifecycleId } = await workspaceOf(admin));
  await startMachines(plane, admin, workspaceId, [
    { name: 'cli-agent', environmentIds: [environments.Staging!, environments.Production!] },
  ]);
  const account = await admin.post('/api/service-account', {
    workspaceId,
    name: 'ci',
    roles: ['View', 'Deploy', 'CreateRelease', 'PushPackages', 'ManageWorkspace'].map((role) => ({ role })),
  });
  expect(account.status, account.text).toBe(200);
  const key = await admin.post('/api/service-account/api-key', { serviceAccountId: account.body.serviceAccountId });
  expect(key.status, key.text).toBe(200);
  ci = { id: account.body.serviceAccountId, key: key.body.apiKey };
  env = { GANTRY_URL: plane.url, GANTRY_ACCOUNT_ID: ci.id, GANTRY_API_KEY: ci.key };
  files = tempDir('gantry-cli-files-');
}, 120_000);

afterAll(async () => {
  await cleanup();
});

function packageFile(name: string, entries: Array<{ name: string; data: string }>): string {
  const file = path.join(files, name);
  writeFileSync(file, makeZip(entries));
  return file;
}

async function projectNamed(steps: Parameters<typeof bashProject>[3]) {
  const { projectId } = await bashProject(admin, workspaceId, lifecycleId, steps);
  const name = (await admin.get('/api/project/details', { projectId })).body.name as string;
  return { projectId, name };
}

async function deploymentsOf(projectId: string) {
  return (await admin.get('/api/deployment/list', { projectId })).body.deployments as Array<{
    deploymentId: string;
    status: string;
    version: string;
    environmentName: string;
  }>;
}

describe('gantry package push, release create, release deploy', () => {
  it('pushes (multipart), creates a release with that package and deploys with --wait --progress showing the script lines', async () => {
    const file = packageFile('Cli.App.1.0.0.zip', [{ name: 'hello.txt', data: 'hello from the package' }]);
    const push = await runCli(['package', 'push', file], env);
    expect(push.code, printed(push)).toBe(0);
    expect(push.stdout).toMatch(/Cli\.App\.1\.0\.0\.zip\s+\S+ B\s+legacy\s+uploaded/);
    const stored = await admin.get('/api/packagestore/packages', { workspaceId, packageId: 'Cli.App' });
    expect(stored.body.packages.map((p: { version: string }) => p.version)).toEqual(['1.0.0']);

    const project = await projectNamed([
      {
        name: 'Greet',
        script: 'cat "$PackageFolder/hello.txt"; echo; echo "deployed to #{CONTEXT.EnvironmentName}"',
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { propertiesJson: JSON.stringify({ Pkg: 'Cli.App' }) },
      },
    ]);
    const create = await runCli(
      [
        'release',
        'create',
        '--project',
        project.name,
        '--version',
        '1.0.0',
        '--package',
        'Cli.App:1.0.0',
        '--notes',
        'first',
      ],
      env,
    );
    expect(create.code, printed(create)).toBe(0);
    const releases = (await admin.get('/api/release', { projectId: project.projectId })).body.releases;
    expect(releases).toMatchObject([{ version: '1.0.0', notes: 'first', packageVersions: { 'Cli.App': '1.0.0' } }]);
    expect(create.stdout).toContain(releases[0].releaseId);

    const deploy = await runCli(
      [
        'release',
        'deploy',
        '--project',
        project.name,
        '--version',
        '1.0.0',
        '--env',
        'Staging',
        '--wait',
        '--progress',
      ],
      env,
    );
    expect(deploy.code, printed(deploy)).toBe(0);
    expect(deploy.stdout).toContain('[Greet @ cli-agent] hello from the package');
    expect(deploy.stdout).toContain('[Greet @ cli-agent] deployed to Staging');
    expect(deploy.stdout).toMatch(/Completed\s+0\s+0/);
    // Every status note names the environment, the first ones too (before a line says where it deploys).
    expect(deploy.stderr).toContain('Deployment Staging: Completed');
    expect(deploy.stderr).not.toMatch(/Deployment [0-9a-f]{8}:/);
    expect(await deploymentsOf(project.projectId)).toMatchObject([
      { status: 'Completed', version: '1.0.0', environmentName: 'Staging' },
    ]);
  }, 90_000);

  it('refuses a package already stored (exit 2), or skips it with --if-exists ignore', async () => {
    const file = packageFile('Cli.Twice.2.0.0.zip', [{ name: 'a.txt', data: 'a' }]);
    expect((await runCli(['package', 'push', file], env)).code).toBe(0);
    const again = await runCli(['package', 'push', file], env);
    expect(again.code, printed(again)).toBe(2);
    expect(again.stderr).toContain('already exists');
    const ignored = await runCli(['package', 'push', file, '--if-exists', 'ignore', '--output', 'json'], env);
    expect(ignored.code, printed(ignored)).toBe(0);
    expect(ignored.json()).toEqual({
      packages: [
        { file, fileName: 'Cli.Twice.2.0.0.zip', sizeBytes: expect.any(Number), mode: null, result: 'exists' },
      ],
    });
  }, 30_000);

  it('uploads directly (PUT to the signed URL, then confirm) into a workspace whose package store has a region', async () => {
    const created = await admin.post('/api/workspace', { name: 'Direct', packageStoreRegion: 'westeurope' });
    expect(created.status, created.text).toBe(200);
    const file = packageFile('Cli.Direct.3.1.0.zip', [{ name: 'd.txt', data: 'direct' }]);
    const adminEnv = { GANTRY_URL: plane.url, GANTRY_ACCOUNT_ID: ADMIN.id, GANTRY_API_KEY: ADMIN.key };
    // The Admin account now sees two workspaces: without --workspace it must say so, not guess.
    const ambiguous = await runCli(['package', 'push', file], adminEnv);
    expect(ambiguous.code, printed(ambiguous)).toBe(2);
    expect(ambiguous.stderr).toContain('choose one with --workspace');

    const push = await runCli(['package', 'push', file, '--workspace', 'Direct', '-o', 'json'], adminEnv);
    expect(push.code, printed(push)).toBe(0);
    expect(push.json().packages).toMatchObject([
      { fileName: 'Cli.Direct.3.1.0.zip', mode: 'direct', result: 'uploaded' },
    ]);
    expect(push.stderr).toContain('(direct)');
    const stored = await admin.get('/api/packagestore/packages', {
      workspaceId: created.body.workspaceId,
      packageId: 'Cli.Direct',
    });
    expect(stored.body.packages).toMatchObject([{ version: '3.1.0', sizeBytes: push.json().packages[0].sizeBytes }]);
  }, 30_000);
});

describe('exit codes', () => {
  it('exits 1 when the script fails, with its error lines on stderr and the failed step’s last lines', async () => {
    const project = await projectNamed([
      { name: 'Boom', script: 'echo "about to fail"\necho "bad thing" >&2\nexit 7' },
    ]);
    expect((await runCli(['release', 'create', '--project', project.name, '--version', '0.1.0'], env)).code).toBe(0);
    const deploy = await runCli(
      ['release', 'deploy', '--project', project.projectId, '--version', '0.1.0', '--env', 'Staging', '--progress'],
      env,
    );
    expect(deploy.code, printed(deploy)).toBe(1);
    expect(deploy.stdout).toContain('[Boom @ cli-agent] about to fail');
    expect(deploy.stderr).toMatch(/Boom on cli-agent failed \(exit code 7\); its last lines:/);
    const tail = deploy.stderr.slice(deploy.stderr.indexOf('its last lines:'));
    expect(tail).toContain('[Boom @ cli-agent] about to fail');
    expect(tail).toContain('[Boom @ cli-agent] bad thing');
    const [failed] = await deploymentsOf(project.projectId);
    expect(failed).toMatchObject({ status: 'Failed' });
    // Only the warnings (what the script wrote to stderr) and errors, still prefixed by step and machine.
    const warnings = await runCli(['deployment', 'logs', failed!.deploymentId, '--level', 'Warning'], env);
    expect(warnings.code, printed(warnings)).toBe(0);
    expect(warnings.stdout).toContain('[Boom @ cli-agent] bad thing');
    expect(warnings.stdout).not.toContain('about to fail');
    expect(warnings.stderr).toMatch(/\[Boom @ cli-agent\] Boom on cli-agent: failed with exit code 7/);
    const errors = await runCli(['deployment', 'logs', failed!.deploymentId, '--level', 'Error', '-o', 'json'], env);
    const levels = (errors.json().logs as Array<{ LogLevel: string }>).map((l) => l.LogLevel);
    expect(levels.length).toBeGreaterThan(0);
    expect(levels.every((level) => level === 'Error' || level === 'Critical')).toBe(true);
    const bad = await runCli(['deployment', 'logs', failed!.deploymentId, '--level', 'Info'], env);
    expect(bad.code).toBe(2);
  }, 60_000);

  it('exits 3 on --timeout and cancels with --cancel-on-timeout: the deployment ends Cancelled', async () => {
    const project = await projectNamed([{ name: 'Slow', script: 'echo "started"\nsleep 120\necho "never"' }]);
    expect((await runCli(['release', 'create', '--project', project.name, '--version', '1.0.0'], env)).code).toBe(0);
    const deploy = await runCli(
      [
        'release',
        'promote',
        '--project',
        project.name,
        '--env',
        'Staging',
        '--wait',
        '--progress',
        '--timeout',
        '2s',
        '--cancel-on-timeout',
      ],
      env,
    );
    expect(deploy.code, printed(deploy)).toBe(3);
    expect(deploy.stdout).toContain('[Slow @ cli-agent] started');
    expect(deploy.stderr).toContain('Timed out after 2.0 s');
    expect(deploy.stderr).toContain('Cancellation requested');
    expect(deploy.stdout).not.toContain('never');
    expect(deploy.ms).toBeLessThan(30_000);
    const [deployment] = await deploymentsOf(project.projectId);
    expect(deployment!.status).toBe('Cancelled');
  }, 60_000);

  it('exits 3 on --timeout without cancelling, and the deployment goes on; deployment cancel then ends it (exit 4 for its waiter)', async () => {
    const project = await projectNamed([{ name: 'Slow', script: 'sleep 120' }]);
    await runCli(['release', 'create', '--project', project.name, '--version', '1.0.0'], env);
    const deploy = await runCli(
      ['release', 'promote', '--project', project.name, '--env', 'Staging', '--wait', '--timeout', '1s', '-o', 'json'],
      env,
    );
    expect(deploy.code, printed(deploy)).toBe(3);
    const result = deploy.json();
    expect(result.outcome).toBe('TimedOut');
    const id = result.deployments[0].deploymentId as string;
    expect(['Queued', 'Validating', 'AwaitingSlot', 'Running']).toContain(
      (await admin.get('/api/deployment', { deploymentId: id, skipLogs: 'true' })).body.status.Status,
    );
    const waiter = runCli(['deployment', 'wait', id], env);
    const cancel = await runCli(['deployment', 'cancel', id, '-o', 'json'], env);
    expect(cancel.code, printed(cancel)).toBe(0);
    expect(cancel.json()).toEqual({ deploymentId: id, cancellationRequested: true });
    const waited = await waiter;
    expect(waited.code, printed(waited)).toBe(4);
    expect(waited.stdout).toMatch(/Cancelled/);
  }, 60_000);

  it('exits 2 with the API’s message for an unknown project name', async () => {
    const run = await runCli(
      ['release', 'deploy', '--project', 'No Such Project', '--version', '1.0.0', '--env', 'Staging'],
      env,
    );
    expect(run.code, printed(run)).toBe(2);
    expect(run.stderr).toContain("Invalid body property 'projectId': is not a valid identifier");
    expect(run.stderr).toContain('errorcode 3001');
    expect(run.stdout).toBe('');
  });

  it('exits 2 for bad usage before asking the server', async () => {
    const missing = await runCli(['release', 'deploy', '--version', '1.0.0', '--env', 'Staging'], env);
    expect(missing.code, printed(missing)).toBe(2);
    expect(missing.stderr).toContain("required option '--project <name|id>' not specified");
    const noTarget = await runCli(['release', 'deploy', '--project', 'x', '--version', '1.0.0'], env);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toContain('--env or --phase');
    const badDuration = await runCli(['deployment', 'wait', 'x', '--timeout', 'soon'], env);
    expect(badDuration.code).toBe(2);
    expect(badDuration.stderr).toContain("'soon' is not a duration");
    // With --output json even a usage error leaves one JSON document on stdout.
    const json = await runCli(['release', 'create', '--version', '1.0.0', '-o', 'json'], env);
    expect(json.code, printed(json)).toBe(2);
    expect(json.json()).toEqual({
      error: { message: "error: required option '--project <name|id>' not specified", exitCode: 2 },
    });
  });

  it('exits 5 for a wrong key (without printing it) and for a missing role', async () => {
    const wrong = await runCli(['status'], { ...env, GANTRY_API_KEY: 'wrong-key-123' });
    expect(wrong.code, printed(wrong)).toBe(5);
    expect(wrong.stderr).toContain('errorcode 2002');
    expect(wrong.stderr + wrong.stdout).not.toContain('wrong-key-123');

    const viewer = await admin.post('/api/service-account', { workspaceId, name: 'viewer', roles: [{ role: 'View' }] });
    const key = await admin.post('/api/service-account/api-key', { serviceAccountId: viewer.body.serviceAccountId });
    const refused = await runCli(['release', 'promote', '--project', 'x', '--env', 'Staging', '-o', 'json'], {
      GANTRY_URL: plane.url,
      GANTRY_ACCOUNT_ID: viewer.body.serviceAccountId,
      GANTRY_API_KEY: key.body.apiKey,
    });
    expect(refused.code, printed(refused)).toBe(5);
    expect(refused.json()).toMatchObject({ error: { exitCode: 5, httpStatus: 401, errorcode: 2003 } });
  });

  it('exits 6 when the server is down, after retrying the reads', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = await runCli(['status'], { ...env, GANTRY_URL: url, GANTRY_RETRY_TIMEOUT: '1s' });
    expect(run.code, printed(run)).toBe(6);
    expect(run.stderr).toContain(`Cannot reach ${url}: ECONNREFUSED`);
    expect(run.stderr).toContain('retrying');
  });
});

describe('names or IDs, JSON output, JAWS_* variables', () => {
  it('takes environments and phases by ID as well as by name', async () => {
    const project = await projectNamed([{ name: 'Id', script: 'echo by-id' }]);
    await runCli(['release', 'create', '--project', project.projectId, '--version', '1.0.0'], env);
    const byId = await runCli(
      [
        'release',
        'deploy',
        '--project',
        project.projectId,
        '--version',
        '1.0.0',
        '--env',
        environments.Staging!,
        '--wait',
        '-o',
        'json',
      ],
      env,
    );
    expect(byId.code, printed(byId)).toBe(0);
    expect(byId.json().deployments).toMatchObject([{ environmentName: 'Staging', status: 'Completed' }]);
    const phases = (await admin.get('/api/lifecycle/details', { lifecycleId })).body.phases as Array<{
      phaseId: string;
      name: string;
    }>;
    const production = phases.find((p) => p.name === 'Production')!;
    const byPhase = await runCli(
      ['release', 'promote', '--project', project.name, '--phase', production.phaseId, '--wait'],
      env,
    );
    expect(byPhase.code, printed(byPhase)).toBe(0);
    expect((await deploymentsOf(project.projectId)).map((d) => [d.environmentName, d.status])).toEqual([
      ['Production', 'Completed'],
      ['Staging', 'Completed'],
    ]);
  }, 60_000);

  it('prints only JSON on stdout with --output json, in the documented shapes', async () => {
    const project = await projectNamed([{ name: 'Json', script: 'echo "json line"\necho "json warning" >&2' }]);
    const notesFile = path.join(files, 'notes.md');
    writeFileSync(notesFile, '# 2.0.0\n\n- JSON everywhere\n');
    const create = await runCli(
      ['release', 'create', '--project', project.name, '--version', '2.0.0', '--notes-file', notesFile, '-o', 'json'],
      env,
    );
    expect(create.code, printed(create)).toBe(0);
    expect(create.json()).toEqual({ releaseId: expect.any(String), projectId: project.projectId, version: '2.0.0' });
    const release = await admin.get('/api/release/details', { releaseId: create.json().releaseId });
    expect(release.body.notes).toBe('# 2.0.0\n\n- JSON everywhere\n');

    const deploy = await runCli(
      [
        'release',
        'deploy',
        '--project',
        project.name,
        '--version',
        '2.0.0',
        '--env',
        'Staging',
        '--progress',
        '-o',
        'json',
      ],
      env,
    );
    expect(deploy.code, printed(deploy)).toBe(0);
    const deployed = deploy.json();
    expect(deployed).toEqual({
      projectId: project.projectId,
      version: '2.0.0',
      outcome: 'Completed',
      deployments: [
        {
          deploymentId: expect.any(String),
          environmentName: 'Staging',
          status: 'Completed',
          errorCount: 0,
          warningCount: 1,
          completedUtc: expect.any(String),
        },
      ],
    });
    // The log lines went to stderr, not into the JSON.
    expect(deploy.stderr).toContain('[Json @ cli-agent] json line');
    const id = deployed.deployments[0].deploymentId as string;

    const waited = await runCli(['deployment', 'wait', id, '-o', 'json'], env);
    expect(waited.code, printed(waited)).toBe(0);
    expect(waited.json()).toEqual({ outcome: 'Completed', deployments: deployed.deployments });

    const logs = await runCli(['deployment', 'logs', id, '-o', 'json'], env);
    expect(logs.code, printed(logs)).toBe(0);
    const read = logs.json();
    expect(read.deploymentId).toBe(id);
    expect(read.status).toMatchObject({ Status: 'Completed', ErrorCount: 0, WarningCount: 1 });
    expect(read.logs.map((l: { Data: string }) => l.Data)).toEqual(
      expect.arrayContaining(['json line', 'json warning']),
    );
    // Ticks exceed 2^53: they stay exact, as decimal strings.
    expect(read.status.LastLogDateTick).toBe(read.logs.at(-1).CreatedUtcTick);
    expect(typeof read.logs[0].CreatedUtcTick).toBe('string');

    const status = await runCli(['status', '--project', project.name, '-o', 'json'], env);
    expect(status.code, printed(status)).toBe(0);
    expect(status.json()).toEqual({
      workspaceId,
      deployments: [
        {
          projectId: project.projectId,
          projectName: project.name,
          environmentId: environments.Staging,
          environmentName: 'Staging',
          version: '2.0.0',
          status: 'Completed',
          deploymentId: id,
          createdUtc: expect.any(String),
          completedUtc: expect.any(String),
        },
      ],
    });

    const machines = await runCli(['machine', 'list', '-o', 'json'], env);
    expect(machines.code, printed(machines)).toBe(0);
    expect(machines.json().machines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'cli-agent', status: 'Online', environments: ['Staging', 'Production'] }),
      ]),
    );
  }, 60_000);

  it('waits for several deployments at once, each line prefixed by its environment', async () => {
    // No lifecycle: every environment is available at once.
    const { projectId } = await bashProject(admin, workspaceId, null as unknown as string, [
      { name: 'Both', script: 'echo "in #{CONTEXT.EnvironmentName}"' },
    ]);
    await runCli(['release', 'create', '--project', projectId, '--version', '1.0.0'], env);
    const run = await runCli(
      [
        'release',
        'promote',
        '--project',
        projectId,
        '--env',
        'Staging',
        '--env',
        'Production',
        '--progress',
        '-o',
        'json',
      ],
      env,
    );
    expect(run.code, printed(run)).toBe(0);
    const result = run.json();
    expect(result.outcome).toBe('Completed');
    expect(result.deployments.map((d: { environmentName: string }) => d.environmentName).sort()).toEqual([
      'Production',
      'Staging',
    ]);
    expect(run.stderr).toContain('Staging [Both @ cli-agent] in Staging');
    expect(run.stderr).toContain('Production [Both @ cli-agent] in Production');
  }, 60_000);

  it('shows logs as text, and follows a running deployment to its end', async () => {
    const project = await projectNamed([{ name: 'Follow', script: 'echo one; sleep 1; echo two' }]);
    await runCli(['release', 'create', '--project', project.name, '--version', '1.0.0'], env);
    const started = await runCli(
      ['release', 'promote', '--project', project.name, '--env', 'Staging', '-o', 'json'],
      env,
    );
    expect(started.code, printed(started)).toBe(0);
    expect(started.json()).toMatchObject({ outcome: 'Started', deployments: [{ status: null }] });
    const id = started.json().deployments[0].deploymentId as string;
    const follow = await runCli(['deployment', 'logs', id, '--follow'], env);
    expect(follow.code, printed(follow)).toBe(0);
    const lines = follow.stdout.split('\n');
    expect(lines.indexOf('[Follow @ cli-agent] one')).toBeLessThan(lines.indexOf('[Follow @ cli-agent] two'));
    expect(lines.indexOf('[Follow @ cli-agent] one')).toBeGreaterThan(-1);
    expect(follow.stderr).toContain('Completed');
    const again = await runCli(['deployment', 'logs', id], env);
    expect(again.stdout).toBe(follow.stdout);
  }, 60_000);

  it('works with the Jaws SDK variables alone (JAWS_API_BASE_URL ending in /api)', async () => {
    const project = await projectNamed([{ name: 'Jaws', script: 'echo jaws' }]);
    const jaws = { JAWS_API_BASE_URL: `${plane.url}/api`, JAWS_API_LOGIN: ci.id, JAWS_API_PASSWORD: ci.key };
    expect((await runCli(['release', 'create', '--project', project.name, '--version', '1.0.0'], jaws)).code).toBe(0);
    const run = await runCli(['release', 'promote', '--project', project.name, '--env', 'Staging', '--progress'], jaws);
    expect(run.code, printed(run)).toBe(0);
    expect(run.stdout).toContain('[Jaws @ cli-agent] jaws');
  }, 60_000);

  it('adds a machine and prints the command that starts its agent, which then comes online', async () => {
    const tag = await admin.post('/api/tag', { workspaceId, name: 'web' });
    expect(tag.status, tag.text).toBe(200);
    const add = await runCli(
      [
        'machine',
        'add',
        'cli-added',
        '--env',
        'Production',
        '--tag',
        'web',
        '--agent-server',
        plane.grpcAddress,
        '-o',
        'json',
      ],
      env,
    );
    expect(add.code, printed(add)).toBe(0);
    const added = add.json();
    expect(added).toMatchObject({
      name: 'cli-added',
      environmentIds: [environments.Production],
      tagIds: [tag.body.tagId],
    });
    expect(added.agentCommand).toBe(
      `GANTRY_SERVER=${plane.grpcAddress} GANTRY_AGENT_TOKEN=${added.registrationToken} GANTRY_AGENT_CA_FINGERPRINT=${plane.caFingerprint} node gantry-agent.mjs`,
    );
    expect(added.installCommand).toMatch(
      new RegExp(
        `^curl -fsSL \\S+/api/agent/install\\.sh \\| sudo sh -s -- --server \\S+ --token ${added.registrationToken} --ca-fingerprint \\S+$`,
      ),
    );
    const variables = Object.fromEntries(
      [...(added.agentCommand as string).matchAll(/(GANTRY_\w+)=(\S+)/g)].map((m) => [m[1], m[2]]),
    );
    startAgent([variables.GANTRY_SERVER!], variables.GANTRY_AGENT_TOKEN, {
      GANTRY_AGENT_CA_FINGERPRINT: variables.GANTRY_AGENT_CA_FINGERPRINT!,
    });
    await waitFor(
      async () => {
        const list = await runCli(['machine', 'list'], env);
        return /cli-added\s+Online\s+Production/.test(list.stdout);
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the added machine online' },
    );
  }, 60_000);
});

describe('gantry status', () => {
  it('shows project × environment → version, status, when', async () => {
    const project = await projectNamed([{ name: 'S', script: 'true' }]);
    await runCli(['release', 'create', '--project', project.name, '--version', '4.5.6'], env);
    const deployed = await runCli(['release', 'promote', '--project', project.name, '--env', 'Staging', '--wait'], env);
    expect(deployed.code, printed(deployed)).toBe(0);
    const [deployment] = await deploymentsOf(project.projectId);
    await waitForDeployment(admin, deployment!.deploymentId);
    const status = await runCli(['status'], env);
    expect(status.code, printed(status)).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`${project.name}\\s+Staging\\s+4\\.5\\.6\\s+Completed\\s+\\d+s ago`));
    expect(status.stdout.split('\n')[0]).toMatch(/^PROJECT\s+ENVIRONMENT\s+VERSION\s+STATUS\s+WHEN$/);
  }, 60_000);
});
