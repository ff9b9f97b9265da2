import { beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, newId } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

const HOUR_MS = 3600_000;

async function pendingMachine(token: string, expiresAt: Date) {
  const id = newId();
  await t.deps.store.machines.insert(
    { id, workspaceId: t.mainWorkspaceId, name: `m-${id}`, tagIds: [], environmentIds: [] },
    { tokenHash: hashSecret(token), expiresAt },
  );
  return id;
}

describe('machines store: registration', () => {
  it('finds a machine by an unexpired token hash only', async () => {
    const now = new Date();
    const id = await pendingMachine('token-a', new Date(now.getTime() + 24 * HOUR_MS));
    const store = t.deps.store.machines;
    expect((await store.findByRegistrationTokenHash(hashSecret('token-a'), now))?.id).toBe(id);
    expect(
      await store.findByRegistrationTokenHash(hashSecret('token-a'), new Date(now.getTime() + 25 * HOUR_MS)),
    ).toBeNull();
    expect(await store.findByRegistrationTokenHash(hashSecret('other'), now)).toBeNull();
  });

  it('completes a registration once: the token is cleared and the credential resolves the machine', async () => {
    const now = new Date();
    const id = await pendingMachine('token-b', new Date(now.getTime() + HOUR_MS));
    const store = t.deps.store.machines;

    expect(
      await store.completeRegistration(
        id,
        hashSecret('cred-b'),
        { agentVersion: '1.0.0', os: 'linux', hostname: 'box' },
        now,
      ),
    ).toBe(true);
    expect(await store.findByRegistrationTokenHash(hashSecret('token-b'), now)).toBeNull();
    expect(await store.completeRegistration(id, hashSecret('cred-b2'), {})).toBe(false);

    const identity = await store.findByCredentialHash(hashSecret('cred-b'));
    expect(identity).toEqual({ id, workspaceId: expect.any(String) });
    const machine = await store.get(id);
    expect(machine?.workspaceId).toBe(identity?.workspaceId);
    expect(machine).toMatchObject({
      id,
      isRegistered: true,
      agentVersion: '1.0.0',
      os: 'linux',
      hostname: 'box',
      lastSeenUtc: now,
    });
    expect(await store.findByCredentialHash(hashSecret('cred-b2'))).toBeNull();
    const [row] = await t.db('machines').where({ id });
    expect(row).toMatchObject({
      registration_token_hash: null,
      registration_expires_at: null,
      agent_credential_hash: hashSecret('cred-b'),
    });
  });

  it('replaces the old credential when a renewed token is used', async () => {
    const now = new Date();
    const id = await pendingMachine('token-c', new Date(now.getTime() + HOUR_MS));
    const store = t.deps.store.machines;
    await store.completeRegistration(id, hashSecret('cred-c1'), {});
    await store.setRegistrationToken(id, hashSecret('token-c2'), new Date(now.getTime() + HOUR_MS));
    expect((await store.findByCredentialHash(hashSecret('cred-c1')))?.id).toBe(id);
    expect(await store.completeRegistration(id, hashSecret('cred-c2'), {})).toBe(true);
    expect(await store.findByCredentialHash(hashSecret('cred-c1'))).toBeNull();
    expect((await store.findByCredentialHash(hashSecret('cred-c2')))?.id).toBe(id);
  });
});

describe('machines store: heartbeats', () => {
  it('records the time and only the reported agent fields', async () => {
    const id = await pendingMachine('token-d', new Date(Date.now() + HOUR_MS));
    const store = t.deps.store.machines;
    await store.completeRegistration(id, hashSecret('cred-d'), { agentVersion: '1.0.0', os: 'linux', hostname: 'box' });
    const at = new Date('2030-01-02T03:04:05.000Z');
    await store.recordHeartbeat(id, at, { agentVersion: '1.1.0' });
    expect(await store.get(id)).toMatchObject({ lastSeenUtc: at, agentVersion: '1.1.0', os: 'linux', hostname: 'box' });
  });

  it("records many agents' heartbeats in one statement, never moving a last-seen time back", async () => {
    const store = t.deps.store.machines;
    const [a, b] = [
      await pendingMachine('token-e', new Date(Date.now() + HOUR_MS)),
      await pendingMachine('token-f', new Date(Date.now() + HOUR_MS)),
    ];
    const earlier = new Date('2030-01-02T03:04:05.000Z');
    const later = new Date('2030-01-02T03:04:06.000Z');
    await store.recordHeartbeat(b, later);
    await store.recordHeartbeats([
      { id: a, at: earlier, homeFreeBytes: 5_000 },
      { id: b, at: earlier },
    ]);
    expect(await store.get(a)).toMatchObject({ lastSeenUtc: earlier, homeFreeBytes: 5_000 });
    // b's Hello (later) was recorded before the batch of an earlier beat was written.
    expect((await store.get(b))?.lastSeenUtc).toEqual(later);
  });
});

describe('machines store: a session starts', () => {
  it('settles an upgrade to the version the agent now runs, and no other, in the same statement', async () => {
    const store = t.deps.store.machines;
    const at = new Date();
    const machine = async (version: string, state: string) => {
      const id = await pendingMachine(`token-${newId()}`, new Date(at.getTime() + HOUR_MS));
      await t
        .db('machines')
        .where({ id })
        .update({ upgrade_version: version, upgrade_state: state, upgrade_message: 'was', upgrade_updated_at: null });
      return id;
    };
    const requested = await machine('2.0.0', 'Requested');
    const started = await machine('2.0.0', 'Started');
    const older = await machine('2.0.0', 'Started');
    const failed = await machine('2.0.0', 'Failed');
    const pending: Array<string | null> = [];
    for (const [id, version] of [
      [requested, '2.0.0'],
      [started, '2.0.0'],
      [older, '1.0.0'],
      [failed, '2.0.0'],
    ] as const)
      pending.push((await store.recordConnected(id, newId(), at, { agentVersion: version })).pendingUpgrade);
    // Only an upgrade still Requested after the write is pending (what a Hello sends UpgradeAgent for).
    expect(pending).toEqual([null, null, null, null]);
    const upgrade = async (id: string) =>
      t.db('machines').where({ id }).first('upgrade_state', 'upgrade_message', 'upgrade_updated_at', 'agent_version');
    expect(await upgrade(requested)).toEqual({
      upgrade_state: 'Succeeded',
      upgrade_message: null,
      upgrade_updated_at: at,
      agent_version: '2.0.0',
    });
    expect(await upgrade(started)).toMatchObject({ upgrade_state: 'Succeeded', upgrade_message: null });
    expect(await upgrade(older)).toMatchObject({
      upgrade_state: 'Started',
      upgrade_message: 'was',
      agent_version: '1.0.0',
    });
    expect(await upgrade(failed)).toMatchObject({ upgrade_state: 'Failed', upgrade_message: 'was' });
    // A session that names no version settles nothing.
    const silent = await machine('2.0.0', 'Requested');
    expect(await store.recordConnected(silent, newId(), at, {})).toEqual({
      offlineSince: null,
      pendingUpgrade: '2.0.0',
    });
    expect(await upgrade(silent)).toMatchObject({ upgrade_state: 'Requested' });
    // An older agent asked to upgrade: the same answer, and since when it had been disconnected.
    const asked = await machine('2.0.0', 'Requested');
    await t
      .db('machines')
      .where({ id: asked })
      .update({ disconnected_at: new Date(at.getTime() - HOUR_MS) });
    expect(await store.recordConnected(asked, newId(), at, { agentVersion: '1.0.0' })).toEqual({
      offlineSince: new Date(at.getTime() - HOUR_MS),
      pendingUpgrade: '2.0.0',
    });
  });

  it('records many Hellos in one statement, each answered as recordConnected answers it alone', async () => {
    const store = t.deps.store.machines;
    const at = new Date();
    const machine = async () => pendingMachine(`token-${newId()}`, new Date(at.getTime() + HOUR_MS));
    const back = await machine();
    const upgrading = await machine();
    const plain = await machine();
    const earlier = new Date(at.getTime() - HOUR_MS);
    await t.db('machines').where({ id: back }).update({ disconnected_at: earlier });
    await t.db('machines').where({ id: upgrading }).update({ upgrade_version: '2.0.0', upgrade_state: 'Requested' });
    const asked = await machine();
    await t.db('machines').where({ id: asked }).update({ upgrade_version: '3.0.0', upgrade_state: 'Requested' });
    const sessions = [newId(), newId(), newId(), newId()];
    const answers = await store.recordConnectedMany([
      { id: plain, sessionId: sessions[0]!, at, info: { agentVersion: '1.0.0', interpreters: ['bash', 'sh'] } },
      { id: back, sessionId: sessions[1]!, at, info: { hostname: 'box', homeFreeBytes: 5_000 } },
      { id: upgrading, sessionId: sessions[2]!, at, info: { agentVersion: '2.0.0' } },
      { id: asked, sessionId: sessions[3]!, at, info: { agentVersion: '1.0.0', interpreters: [] } },
      { id: newId(), sessionId: newId(), at, info: {} }, // deleted meanwhile: no answer
    ]);
    expect(answers).toEqual(
      new Map([
        [plain, { offlineSince: null, pendingUpgrade: null }],
        [back, { offlineSince: earlier, pendingUpgrade: null }],
        [upgrading, { offlineSince: null, pendingUpgrade: null }],
        [asked, { offlineSince: null, pendingUpgrade: '3.0.0' }],
      ]),
    );
    const row = (id: string) =>
      t
        .db('machines')
        .where({ id })
        .first(
          'session_id',
          'disconnected_at',
          'last_seen_at',
          'agent_version',
          'hostname',
          'interpreters',
          'home_free_bytes',
          'upgrade_state',
        );
    expect(await row(plain)).toMatchObject({
      session_id: sessions[0],
      agent_version: '1.0.0',
      interpreters: ['bash', 'sh'],
      last_seen_at: at,
    });
    expect(await row(back)).toMatchObject({
      session_id: sessions[1],
      disconnected_at: null,
      hostname: 'box',
      home_free_bytes: '5000',
    });
    expect(await row(upgrading)).toMatchObject({ session_id: sessions[2], upgrade_state: 'Succeeded' });
    expect(await row(asked)).toMatchObject({ upgrade_state: 'Requested', interpreters: [] });
    expect(await store.recordConnectedMany([])).toEqual(new Map());
  });

  it('finds many machines by their credential hashes in one read', async () => {
    const store = t.deps.store.machines;
    const registered = async (credential: string) => {
      const id = await pendingMachine(`token-${newId()}`, new Date(Date.now() + HOUR_MS));
      expect(await store.completeRegistration(id, hashSecret(credential), {})).toBe(true);
      return id;
    };
    const [one, two] = [await registered('cred-many-1'), await registered('cred-many-2')];
    const found = await store.findByCredentialHashes([
      hashSecret('cred-many-1'),
      hashSecret('cred-many-2'),
      hashSecret('unknown'),
    ]);
    expect(found).toEqual(
      new Map([
        [hashSecret('cred-many-1'), { id: one, workspaceId: t.mainWorkspaceId }],
        [hashSecret('cred-many-2'), { id: two, workspaceId: t.mainWorkspaceId }],
      ]),
    );
    expect(await store.findByCredentialHashes([])).toEqual(new Map());
  });

  it('records many ended sessions in one statement, marking only machines whose ended session is still their current one', async () => {
    const store = t.deps.store.machines;
    const at = new Date();
    const connected = async () => {
      const id = await pendingMachine(`token-${newId()}`, new Date(at.getTime() + HOUR_MS));
      const sessionId = newId();
      await store.recordConnected(id, sessionId, at, {});
      return { id, sessionId };
    };
    const ended = await connected();
    const replaced = await connected();
    await store.recordConnected(replaced.id, newId(), at, {});
    const already = await connected();
    const earlier = new Date(at.getTime() - HOUR_MS);
    await t.db('machines').where({ id: already.id }).update({ disconnected_at: earlier });
    const later = new Date(at.getTime() + 1000);
    const marked = await store.recordDisconnects(
      [ended, replaced, already].map(({ id, sessionId }) => ({ id, sessionId, at: later })),
    );
    expect(marked).toEqual([ended.id]);
    const disconnectedAt = async (id: string) =>
      (await t.db('machines').where({ id }).first('disconnected_at')).disconnected_at;
    expect(await disconnectedAt(ended.id)).toEqual(later);
    expect(await disconnectedAt(replaced.id)).toBeNull();
    expect(await disconnectedAt(already.id)).toEqual(earlier);
    expect(await store.recordDisconnects([])).toEqual([]);
  });
});
