/**
 * The engine's read of an environment's machines (validation plans from it) is lean — a flag for
 * the credential, times as epoch milliseconds — and must give exactly what the full read gives.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { environmentId } from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let staging: string;
const ids = { registered: newId(), disconnected: newId(), unregistered: newId(), elsewhere: newId() };

beforeAll(async () => {
  t = await testApp();
  staging = await environmentId(t, 'Staging');
  const production = await environmentId(t, 'Production');
  const insert = (id: string, name: string, columns: Record<string, unknown>) =>
    t.db('machines').insert({ id, workspace_id: t.mainWorkspaceId, name, ...columns });
  // Microseconds in the times: a read that rounded instead of truncating would differ from the full one.
  await insert(ids.registered, 'web-1', {
    tag_ids: ['tag-a', 'tag-b'],
    agent_credential_hash: 'a'.repeat(64),
    last_seen_at: t.db.raw(`'2026-11-27 11:40:38.130999+00'::timestamptz`),
  });
  await insert(ids.disconnected, 'web-2', {
    enabled: false,
    agent_credential_hash: 'b'.repeat(64),
    last_seen_at: t.db.raw(`'2026-11-27 09:00:00.000001+00'::timestamptz`),
    disconnected_at: t.db.raw(`'2026-11-27 09:00:15.999999+00'::timestamptz`),
  });
  await insert(ids.unregistered, 'web-3', {});
  await insert(ids.elsewhere, 'db-1', { agent_credential_hash: 'c'.repeat(64) });
  await t.db('machine_environments').insert([
    { machine_id: ids.registered, environment_id: staging },
    { machine_id: ids.disconnected, environment_id: staging },
    { machine_id: ids.unregistered, environment_id: staging },
    { machine_id: ids.elsewhere, environment_id: production },
  ]);
});

describe('deploymentMachines.listInEnvironment', () => {
  it("reads each of the environment's machines exactly as the full read does, and no other", async () => {
    const { deploymentMachines } = t.deps.store;
    const listed = await deploymentMachines.listInEnvironment(staging);
    const full = await deploymentMachines.getMany([ids.registered, ids.disconnected, ids.unregistered]);
    expect(listed.map((m) => m.machineId).sort()).toEqual([...full.keys()].sort());
    for (const machine of listed) expect(machine).toEqual(full.get(machine.machineId));
    const registered = listed.find((m) => m.machineId === ids.registered)!;
    expect(registered).toMatchObject({
      isRegistered: true,
      enabled: true,
      tagIds: ['tag-a', 'tag-b'],
      disconnectedUtc: null,
    });
    expect(registered.lastSeenUtc?.toISOString()).toBe('2026-11-27T11:40:38.130Z');
    expect(listed.find((m) => m.machineId === ids.disconnected)?.disconnectedUtc?.toISOString()).toBe(
      '2026-11-27T09:00:15.999Z',
    );
    expect(listed.find((m) => m.machineId === ids.unregistered)).toMatchObject({
      isRegistered: false,
      lastSeenUtc: null,
      disconnectedUtc: null,
    });
  });
});
