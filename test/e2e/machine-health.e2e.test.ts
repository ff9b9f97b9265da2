/**
 * Machine health as a real agent reports it: version, OS and architecture, the interpreters on its
 * PATH and the free disk in its home, in GET /api/machine beside the spec's status.
 */
import { statfsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { api, cleanup, startControlPlane, startedAgents, startMachines, workspaceOf } from './harness.ts';

describe('machine health reported by a real agent', () => {
  afterAll(async () => {
    await cleanup();
  });

  let context: { client: ReturnType<typeof api>; workspaceId: string; machineId: string };

  beforeAll(async () => {
    const plane = await startControlPlane();
    const client = api(plane.url);
    const { workspaceId, environments } = await workspaceOf(client);
    const ids = await startMachines(plane, client, workspaceId, [
      { name: 'healthy', environmentIds: [environments.Staging!] },
    ]);
    context = { client, workspaceId, machineId: ids.healthy! };
  }, 120_000);

  const read = async () =>
    (await context.client.get('/api/machine', { workspaceId: context.workspaceId, take: '100' })).body.machines.find(
      (m: { machineId: string }) => m.machineId === context.machineId,
    );

  it('shows Online with the agent version, OS/arch, interpreters found and free disk in its home', async () => {
    // Online comes with the agent's Register; its health facts with the session's Hello just after
    // (a CI run under load read the machine between the two).
    await waitFor(async () => (await read()).interpreters !== null, { timeoutMs: 20_000, intervalMs: 100 });
    const machine = await read();
    expect(machine).toMatchObject({
      status: 'Online',
      health: 'Online',
      healthReasons: [],
      agentVersion: '0.1.0',
      os: `linux ${process.arch}`,
    });
    expect(machine.interpreters).toEqual(expect.arrayContaining(['bash', 'sh']));
    const home = startedAgents.get('healthy')!.home;
    const stats = statfsSync(home);
    const free = stats.bavail * stats.bsize;
    // The same file system, asked a moment apart: within 1 GiB of what the agent said.
    expect(Math.abs(machine.freeDiskBytes - free)).toBeLessThan(1024 ** 3);
    expect(new Date(machine.lastSeenUtc).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('shows Offline once the agent stops', async () => {
    startedAgents.get('healthy')!.child.kill('SIGTERM');
    await waitFor(async () => (await read()).health === 'Offline', { timeoutMs: 20_000, intervalMs: 200 });
    expect((await read()).status).toBe('Offline');
  });
});
