/**
 * Enrollment keys: created by a workspace admin bound to environments and tags, stored only as a
 * hash, listed without the secret, revocable; redeemed (domain) into machines with their own
 * credentials — refused once revoked or expired, and never taking over another machine's name.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, systemClock } from '../../../services/core/index.ts';
import { redeemEnrollmentKey } from '../../../services/domain/index.ts';
import { createStore } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let staging: string;
let tagId: string;

beforeAll(async () => {
  t = await testApp();
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  staging = environments.body.environments.find((e: { name: string }) => e.name === 'Staging').environmentId;
  tagId = (await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'fleet' })).body.tagId;
});

const report = (machineName: string) => ({ machineName, hostname: 'h', os: 'linux x64', agentVersion: '0.1.0' });

async function createKey(extra: Record<string, unknown> = {}) {
  const created = await t.admin.post('/api/machine/enrollment-key', {
    workspaceId: t.mainWorkspaceId,
    name: 'web fleet',
    environmentIds: [staging],
    tagIds: [tagId],
    ...extra,
  });
  expect(created.status).toBe(200);
  return created.body;
}

describe('POST /api/machine/enrollment-key', () => {
  it('answers the key once, with the install line; stores only its hash; lists it without the secret', async () => {
    const created = await createKey({ expiresInHours: 24 });
    expect(created.enrollmentKey).toMatch(/^[\w-]{40,}$/);
    expect(created.installCommand).toContain(`--enrollment-key ${created.enrollmentKey}`);
    expect(created).toMatchObject({ environmentIds: [staging], tagIds: [tagId], useCount: 0, revokedUtc: null });
    expect(new Date(created.expiresUtc).getTime() - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const [row] = await t.db('enrollment_keys').where({ id: created.enrollmentKeyId });
    expect(row.key_hash).toBe(hashSecret(created.enrollmentKey));
    expect(JSON.stringify(row)).not.toContain(created.enrollmentKey);
    const list = await t.admin.get('/api/machine/enrollment-key', { workspaceId: t.mainWorkspaceId });
    expect(list.status).toBe(200);
    expect(list.body.enrollmentKeys.map((k: { enrollmentKeyId: string }) => k.enrollmentKeyId)).toContain(
      created.enrollmentKeyId,
    );
    expect(JSON.stringify(list.body)).not.toContain(created.enrollmentKey);
  });

  it('refuses unknown environments, no environment, and expiries out of range with 400', async () => {
    for (const body of [
      { environmentIds: ['nope'] },
      { environmentIds: [] },
      { environmentIds: [staging], expiresInHours: 0 },
      { environmentIds: [staging], expiresInHours: 24 * 400 },
    ]) {
      const response = await t.admin.post('/api/machine/enrollment-key', {
        workspaceId: t.mainWorkspaceId,
        name: 'bad',
        ...body,
      });
      expect(response.status).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
  });
});

describe('enrolling with a key', () => {
  const store = () => createStore(t.db);

  it('creates a registered machine in the key’s environments and tags, with its own credential', async () => {
    const key = await createKey();
    const result = await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('web-7'));
    if (!result.ok) throw new Error(result.reason);
    const machine = (await t.admin.get('/api/machine/details', { machineId: result.machineId })).body;
    expect(machine).toMatchObject({ name: 'web-7', tagIds: [tagId], environments: [{ environmentId: staging }] });
    const [row] = await t.db('machines').where({ id: result.machineId });
    expect(row.agent_credential_hash).toBe(hashSecret(result.credential));
    expect(row.enrollment_key_id).toBe(key.enrollmentKeyId);

    // The same name with the same key (a rebuilt host): a new credential on the same machine.
    const again = await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('web-7'));
    expect(again).toMatchObject({ ok: true, machineId: result.machineId });
    const listed = (await t.admin.get('/api/machine/enrollment-key', { workspaceId: t.mainWorkspaceId })).body;
    expect(
      listed.enrollmentKeys.find((k: { enrollmentKeyId: string }) => k.enrollmentKeyId === key.enrollmentKeyId),
    ).toMatchObject({ useCount: 2 });
  });

  it('never takes over a machine of that name that the key did not enroll', async () => {
    await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'db-1' });
    const key = await createKey();
    expect(await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('db-1'))).toEqual({
      ok: false,
      reason: 'name-taken',
    });
    expect(await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('bad name!'))).toEqual({
      ok: false,
      reason: 'invalid-name',
    });
  });

  it('is refused once revoked or expired; machines it enrolled keep their credentials', async () => {
    const key = await createKey();
    const enrolled = await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('web-8'));
    expect(enrolled.ok).toBe(true);
    const revoked = await t.admin.delete('/api/machine/enrollment-key', { enrollmentKeyId: key.enrollmentKeyId });
    expect(revoked.status).toBe(200);
    expect(await redeemEnrollmentKey(store(), systemClock, key.enrollmentKey, report('web-9'))).toEqual({
      ok: false,
      reason: 'refused',
    });
    const [row] = await t.db('machines').where({ name: 'web-8' });
    expect(row.agent_credential_hash).not.toBeNull();

    const expiring = await createKey({ expiresInHours: 1 });
    await t
      .db('enrollment_keys')
      .where({ id: expiring.enrollmentKeyId })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await redeemEnrollmentKey(store(), systemClock, expiring.enrollmentKey, report('web-10'))).toEqual({
      ok: false,
      reason: 'refused',
    });
  });

  it('answers 400 for an unknown key ID on revoke', async () => {
    const response = await t.admin.delete('/api/machine/enrollment-key', { enrollmentKeyId: 'nope' });
    expect(response.status).toBe(400);
  });
});
