/**
 * End to end: packages travel from a real multipart upload to real agents. A good package is
 * unpacked into the step's work folder; archives whose entries escape it are refused — at upload
 * when the server can tell (zip `../`), otherwise by the agent before the script runs.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTar, buildZip } from '../agent/archive/archive-builders.ts';
import { makeZip } from '../services/packages/archives.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  startedAgents,
  targetStatuses,
  tempDir,
  uploadPackage,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';
import { E2E_MODES } from './modes.ts';

const AGENTS = ['pkg-agent-1', 'pkg-agent-2', 'pkg-agent-3'];
const PACKAGE_PROPERTY = JSON.stringify([
  { Id: 'Pkg', Name: 'Package', ControlType: 'PackageSelector', DefaultValue: '' },
]);

/** Every file or link named `name` below `root`, at any depth. */
function findNamed(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.name === name) found.push(full);
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(root);
  return found;
}

describe.each(E2E_MODES)('packages end to end on $name (three agents)', (mode) => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;

  beforeAll(async () => {
    plane = await startControlPlane(await mode.options());
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    await startMachines(
      plane,
      client,
      workspaceId,
      AGENTS.map((name) => ({ name, environmentIds: [workspace.environments.Staging!] })),
    );
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  /** A one-step project whose step uses `packageId` through a PackageSelector property; returns the Staging deployment's final status. */
  async function deployWithPackage(packageId: string, script: string) {
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Unpack',
        script,
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { propertiesJson: JSON.stringify({ Pkg: packageId }) },
      },
    ]);
    const [id] = await releaseAndDeploy(client, projectId, ['Staging']);
    const status = await waitForDeployment(client, id!, 30_000);
    return { id: id!, status, logs: await logsOf(client, id!) };
  }

  function evilFiles(): string[] {
    return [...startedAgents.values()].flatMap((agent) => findNamed(agent.home, 'evil.txt'));
  }

  it('unpacks a good package into the work folder where the script reads it', async () => {
    const run = 'echo "run.sh says hi"\n';
    const uploaded = await uploadPackage(
      plane.url,
      workspaceId,
      'Good.App.1.0.0.zip',
      makeZip([{ name: 'app/run.sh', data: run }]),
    );
    expect(uploaded.status, uploaded.text).toBe(200);

    const { id, status, logs } = await deployWithPackage(
      'Good.App',
      // Both ways to the folder: the agent's environment, and the contract's system value.
      'cat "$PackageFolder/app/run.sh"\nbash "#{CONTEXT.PackageFolder}/app/run.sh"',
    );
    expect(status).toMatchObject({ Status: 'Completed', ErrorCount: 0 });
    const data = logs.map((l) => l.Data);
    expect(data.filter((d) => d === 'echo "run.sh says hi"')).toHaveLength(3);
    expect(data.filter((d) => d === 'run.sh says hi')).toHaveLength(3);
    expect(Object.values((await targetStatuses(client, id)).Unpack!)).toEqual(['Succeeded', 'Succeeded', 'Succeeded']);
  }, 60_000);

  it('refuses a zip whose entry escapes the folder at upload, leaving nothing in the feed', async () => {
    const evil = buildZip([
      { name: 'app/ok.txt', data: 'fine' },
      { name: '../evil.txt', data: 'pwned' },
    ]);
    const uploaded = await uploadPackage(plane.url, workspaceId, 'Evil.App.1.0.0.zip', evil);
    expect(uploaded.status, uploaded.text).toBe(400);
    expect(uploaded.body.error).toContain('not a readable zip archive');
    const listed = await client.get('/api/packagestore/packages', { workspaceId, packageId: 'Evil.App' });
    expect(listed.body.packages).toEqual([]);
  }, 30_000);

  it('has the agent refuse an archive whose entry escapes the work folder: the step fails and no file lands outside', async () => {
    // node-tar lists `../evil.txt` without complaint, so this one reaches the feed and the agents.
    const evil = buildTar(
      [
        { path: 'app/ok.txt', data: 'fine' },
        { path: '../evil.txt', data: 'pwned' },
      ],
      true,
    );
    const uploaded = await uploadPackage(plane.url, workspaceId, 'Evil.Tar.1.0.0.tar.gz', evil);
    expect(uploaded.status, uploaded.text).toBe(200);

    const { id, status, logs } = await deployWithPackage('Evil.Tar', 'echo "the script ran"');
    expect(status.Status).toBe('Failed');
    expect(Object.values((await targetStatuses(client, id)).Unpack!)).toEqual(['Failed', 'Failed', 'Failed']);
    const refusals = logs.filter(
      (l) =>
        l.LogLevel === 'Error' && l.Data.includes('Archive refused: entry "../evil.txt" escapes the target folder'),
    );
    expect(refusals.length).toBeGreaterThanOrEqual(3);
    expect(logs.some((l) => l.Data === 'the script ran')).toBe(false);
    expect(evilFiles()).toEqual([]);
  }, 60_000);

  it('has the agent refuse a zip with a symbolic link entry', async () => {
    // yauzl at upload checks names, not modes: a link entry is only caught by the agent.
    const outside = tempDir('gantry-e2e-outside-');
    const evil = buildZip([
      { name: 'app/escape', data: outside, unixMode: 0o120777 },
      { name: 'app/escape/evil.txt', data: 'pwned' },
    ]);
    const uploaded = await uploadPackage(plane.url, workspaceId, 'Evil.Link.1.0.0.zip', evil);
    expect(uploaded.status, uploaded.text).toBe(200);

    const { status, logs } = await deployWithPackage('Evil.Link', 'echo "the script ran"');
    expect(status.Status).toBe('Failed');
    expect(
      logs.filter((l) => l.LogLevel === 'Error' && l.Data.includes('is a symbolic link')).length,
    ).toBeGreaterThanOrEqual(3);
    expect(logs.some((l) => l.Data === 'the script ran')).toBe(false);
    expect(evilFiles()).toEqual([]);
    expect(readdirSync(outside)).toEqual([]);
  }, 60_000);
});
