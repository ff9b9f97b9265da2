/**
 * POST /api/machine/upgrade: which machines are asked (by ID, by environment), what each answer
 * says, who may ask, and how a failed upgrade shows in the machine's health. The agent's side
 * (drain, checksum, self-test, swap, restart) is test/services/gateway/agent-upgrade.test.ts and
 * test/e2e/agent-upgrade.e2e.test.ts.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../services/core/index.ts';
import { loadAgentDistribution, type AgentDistribution } from '../../../services/packages/index.ts';
import { agentBundle } from '../../helpers/agent-bundle.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let bare: TestContext;
let distribution: AgentDistribution;
let staging: string;
let production: string;

beforeAll(async () => {
  const loaded = await loadAgentDistribution(path.dirname(agentBundle()), createLogger('silent'));
  if (!loaded) throw new Error('the agent build has no bundle');
  // The control plane ships 0.2.0: machines reporting 0.1.0 are behind it.
  distribution = { ...loaded, version: '0.2.0' };
  [t, bare] = await Promise.all([testApp({ agentDistribution: distribution }), testApp()]);
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  const byName = (name: string) =>
    environments.body.environments.find((e: { name: string }) => e.name === name).environmentId as string;
  staging = byName('Staging');
  production = byName('Production');
});

let counter = 0;
/** A machine whose agent registered and reported `version`, seen `secondsAgo` (null: never registered). */
async function machine(
  environmentIds: string[],
  agent: { version: string; secondsAgo: number } | null,
  ctx: TestContext = t,
): Promise<string> {
  const created = await ctx.admin.post('/api/machine', {
    workspaceId: ctx.mainWorkspaceId,
    name: `upgrade-${++counter}`,
    environmentIds,
  });
  if (created.status !== 200) throw new Error(created.text);
  const machineId = created.body.machineId as string;
  if (agent)
    await ctx
      .db('machines')
      .where({ id: machineId })
      .update({
        agent_credential_hash: `${counter}`.padStart(64, 'a'),
        agent_version: agent.version,
        last_seen_at: new Date(Date.now() - agent.secondsAgo * 1000),
      });
  return machineId;
}

const details = async (machineId: string) => (await t.admin.get('/api/machine/details', { machineId })).body;

describe('POST /api/machine/upgrade', () => {
  it('asks the named machines to run the shipped version, saying for each what happens', async () => {
    const online = await machine([staging], { version: '0.1.0', secondsAgo: 1 });
    const offline = await machine([staging], { version: '0.1.0', secondsAgo: 3600 });
    const current = await machine([staging], { version: '0.2.0', secondsAgo: 1 });
    const pending = await machine([staging], null);
    const response = await t.admin.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      machineIds: [online, offline, current, pending],
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.version).toBe('0.2.0');
    const outcome = Object.fromEntries(
      response.body.machines.map((m: { machineId: string; outcome: string }) => [m.machineId, m.outcome]),
    );
    expect(outcome).toEqual({
      [online]: 'Requested',
      [offline]: 'Queued',
      [current]: 'UpToDate',
      [pending]: 'NotRegistered',
    });
    expect((await details(online)).upgrade).toMatchObject({ version: '0.2.0', state: 'Requested', message: null });
    expect((await details(offline)).upgrade).toMatchObject({ version: '0.2.0', state: 'Requested' });
    expect((await details(current)).upgrade).toBeNull();
    expect((await details(pending)).upgrade).toBeNull();
  });

  it("asks every machine of an environment, and no other's", async () => {
    const env = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Upgrade Ring 1' });
    const ring = env.body.environmentId as string;
    const inRing = [
      await machine([ring], { version: '0.1.0', secondsAgo: 1 }),
      await machine([ring, production], { version: '0.1.0', secondsAgo: 1 }),
    ];
    const outside = await machine([production], { version: '0.1.0', secondsAgo: 1 });
    const response = await t.admin.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      environmentId: ring,
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.machines.map((m: { machineId: string }) => m.machineId).sort()).toEqual([...inRing].sort());
    expect((await details(outside)).upgrade).toBeNull();
  });

  it('shows a failed upgrade in the machine health, with the reason the agent gave', async () => {
    const machineId = await machine([staging], { version: '0.1.0', secondsAgo: 1 });
    await t.admin.post('/api/machine/upgrade', { workspaceId: t.mainWorkspaceId, machineIds: [machineId] });
    await t.db('machines').where({ id: machineId }).update({
      upgrade_state: 'Failed',
      upgrade_message: 'the bundle failed its checksum (expected sha256 x, got y)',
    });
    expect(await details(machineId)).toMatchObject({
      status: 'Online',
      health: 'Unhealthy',
      healthReasons: ['its upgrade to agent 0.2.0 failed: the bundle failed its checksum (expected sha256 x, got y)'],
      upgrade: { state: 'Failed', version: '0.2.0' },
    });
  });

  it('refuses a request naming no machine, unknown or foreign machines and environments, asking none', async () => {
    const machineId = await machine([staging], { version: '0.1.0', secondsAgo: 1 });
    const none = await t.admin.post('/api/machine/upgrade', { workspaceId: t.mainWorkspaceId });
    expect(none.status).toBe(400);
    expect(none.body.error).toContain('machineIds');
    const unknown = await t.admin.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      machineIds: [machineId, 'no-such-machine'],
    });
    expect(unknown.status).toBe(400);
    const badEnvironment = await t.admin.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      environmentId: 'no-such-environment',
    });
    expect(badEnvironment.status).toBe(400);
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }], other);
    const foreign = await outsider.post('/api/machine/upgrade', { workspaceId: other, machineIds: [machineId] });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errorcode).toBe(3001);
    expect((await details(machineId)).upgrade).toBeNull();
  });

  it('needs ManageWorkspace over every machine it names', async () => {
    const inProduction = await machine([production], { version: '0.1.0', secondsAgo: 1 });
    const viewer = await t.account([{ role: 'View' }]);
    const viewed = await viewer.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      machineIds: [inProduction],
    });
    expect(viewed.status).toBe(401);
    expect(viewed.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    const stagingManager = await t.account([{ role: 'ManageWorkspace', environmentIds: [staging] }]);
    const scoped = await stagingManager.post('/api/machine/upgrade', {
      workspaceId: t.mainWorkspaceId,
      machineIds: [inProduction],
    });
    expect(scoped.status).toBe(401);
    expect(scoped.body.error).toContain(production);
    expect((await details(inProduction)).upgrade).toBeNull();
  });

  it('answers 503 when this control plane ships no agent bundle', async () => {
    const machineId = await machine([], { version: '0.1.0', secondsAgo: 1 }, bare);
    const response = await bare.admin.post('/api/machine/upgrade', {
      workspaceId: bare.mainWorkspaceId,
      machineIds: [machineId],
    });
    expect(response.status).toBe(503);
    expect(response.body.error).toContain('npm run build:agent');
    expect((await bare.db('machines').where({ id: machineId }).first()).upgrade_state).toBeNull();
  });
});
