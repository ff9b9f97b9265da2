/**
 * What a retrying pipeline relies on: a deploy committed while the bus is down answers 200 and
 * runs once the bus is back (PostgreSQL holds the truth, the bus only wakes), and an
 * `Idempotency-Key` makes a retried release create, deploy or promote return the first answer
 * instead of acting twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../../services/bus/index.ts';
import { createLogger, type Clock } from '../../../services/core/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { startOwnNatsServer, type OwnNatsServer } from '../../helpers/nats-server.ts';
import { waitFor } from '../../helpers/wait-for.ts';

let now = new Date('2026-11-23T10:00:00Z');
const clock: Clock = { now: () => new Date(now) };
let t: TestContext;
let counter = 0;

beforeAll(async () => {
  t = await testApp({ clock });
});

/** A project with one step and no machine (it completes with a warning), and a release of it. */
async function releasedProject(): Promise<{ projectId: string; releaseId: string }> {
  const suffix = ++counter;
  const template = await t.admin.post('/api/step-template', {
    workspaceId: t.mainWorkspaceId,
    name: `retry-template-${suffix}`,
    script: 'echo hi',
    scriptLanguage: 'bash',
  });
  const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: `retry-${suffix}` });
  const projectId = project.body.projectId as string;
  await t.admin.post('/api/project/step', { projectId, name: 'Say hi', stepTemplateId: template.body.stepTemplateId });
  const release = await t.admin.post('/api/release', { projectId, version: '1.0.0' });
  expect(release.status, release.text).toBe(200);
  return { projectId, releaseId: release.body.releaseId };
}

async function rows(table: string, where: Record<string, string>): Promise<number> {
  const [row] = await t.db(table).where(where).count({ n: '*' });
  return Number(row?.n);
}

function withKey(key: string) {
  return (method: 'POST', path: string, body: unknown) =>
    t.admin.raw({
      method,
      path,
      payload: JSON.stringify(body),
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    });
}

describe('a deploy while NATS is down', () => {
  let nats: OwnNatsServer;
  let bus: Bus;
  let engine: Engine;

  beforeAll(async () => {
    nats = await startOwnNatsServer();
    const logger = createLogger('silent');
    bus = await createBus({ natsUrl: nats.url, prefix: `retry${Date.now()}`, logger });
    engine = createEngine({
      store: t.deps.store,
      clock: t.deps.clock,
      bus,
      secrets: t.deps.secrets,
      logger,
      sweepIntervalMs: 200,
    });
    await engine.start();
    t.app.deps.wakeDeployments = (ids) => engine.wake(ids);
  });

  afterAll(async () => {
    t.app.deps.wakeDeployments = undefined;
    await engine.stop();
    await bus.close();
    await nats.dispose();
  });

  it('answers 200 once the deployment is committed, and the deployment runs when NATS is back', async () => {
    now = new Date();
    const { releaseId } = await releasedProject();
    await nats.stop();
    const deployed = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(deployed.status, deployed.text).toBe(200);
    const [deploymentId] = deployed.body.deploymentIds as string[];
    expect(await rows('deployments', { id: deploymentId! })).toBe(1);

    await nats.start();
    const final = await waitFor(
      async () => {
        now = new Date();
        const status = (await t.admin.get('/api/deployment', { deploymentId, skipLogs: true })).body.status.Status;
        return ['Completed', 'Failed', 'Cancelled'].includes(status) ? status : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'the deployment to finish after NATS returned' },
    );
    expect(final).toBe('Completed');
  }, 60_000);
});

describe('Idempotency-Key', () => {
  it('returns the first release instead of creating a second one', async () => {
    const { projectId } = await releasedProject();
    const post = withKey(`release-${counter}`);
    const first = await post('POST', '/api/release', { projectId, version: '2.0.0' });
    const second = await post('POST', '/api/release', { projectId, version: '2.0.0' });
    expect(first.status, first.text).toBe(200);
    expect(second.status, second.text).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await rows('releases', { project_id: projectId, version: '2.0.0' })).toBe(1);
  });

  it('returns the first deployments of a deploy and of a promote instead of queueing more', async () => {
    const { projectId, releaseId } = await releasedProject();
    const deploy = withKey(`deploy-${counter}`);
    const first = await deploy('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    const again = await deploy('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(first.status, first.text).toBe(200);
    expect(again.body).toEqual(first.body);
    const promote = withKey(`promote-${counter}`);
    const promoted = await promote('POST', '/api/release/promote', { projectId, environments: ['Staging'] });
    const promotedAgain = await promote('POST', '/api/release/promote', { projectId, environments: ['Staging'] });
    expect(promoted.status, promoted.text).toBe(200);
    expect(promotedAgain.body).toEqual(promoted.body);
    expect(await rows('deployments', { release_id: releaseId })).toBe(2);
  });

  it('stores the answer in the transaction of the change it reports', async () => {
    const { releaseId } = await releasedProject();
    const key = `atomic-${counter}`;
    const deployed = await withKey(key)('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    const stored = await t.db('idempotency_keys').where({ key }).first();
    expect(stored.completed_at).not.toBeNull();
    expect(stored.response).toEqual(deployed.body);
  });

  it('refuses the same key for another request, and leaves no claim behind a refused request', async () => {
    const { releaseId } = await releasedProject();
    const post = withKey(`mixed-${counter}`);
    const refused = await post('POST', '/api/release/deploy', { releaseId, environments: ['Nowhere'] });
    expect(refused.status).toBe(400);
    const deployed = await post('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(deployed.status, deployed.text).toBe(200);
    const other = await post('POST', '/api/release/deploy', { releaseId, environments: ['Production'] });
    expect(other.status).toBe(400);
    expect(other.body.validationErrors[0].property).toBe('Idempotency-Key');
    expect(await rows('deployments', { release_id: releaseId })).toBe(1);
  });

  it('answers 409 while the first request with the key is still in progress', async () => {
    const { releaseId } = await releasedProject();
    const key = `busy-${counter}`;
    const body = { releaseId, environments: ['Staging'] };
    // The first request claimed the key and has not committed yet.
    await t.deps.store.idempotencyKeys.claim('test-admin', key, {
      operation: 'release.deploy',
      requestHash: (await import('node:crypto'))
        .createHash('sha256')
        .update('release.deploy')
        .update('\n')
        .update(JSON.stringify(body))
        .digest('hex'),
      now: clock.now(),
      expiredBefore: new Date(0),
      abandonedBefore: new Date(0),
    });
    const busy = await withKey(key)('POST', '/api/release/deploy', body);
    expect(busy.status).toBe(409);
    expect(busy.body).toEqual({
      error: expect.stringContaining('in progress'),
      errorcode: 3001,
      requestid: expect.any(String),
    });
    expect(await rows('deployments', { release_id: releaseId })).toBe(0);
  });

  it('lets a retry take over a claim presumed abandoned, and the first request can then no longer answer', async () => {
    const { releaseId } = await releasedProject();
    const key = `takeover-${counter}`;
    const body = { releaseId, environments: ['Staging'] };
    const first = await t.deps.store.idempotencyKeys.claim('test-admin', key, {
      operation: 'release.deploy',
      requestHash: 'whatever the first request sent',
      now: clock.now(),
      expiredBefore: new Date(0),
      abandonedBefore: new Date(0),
    });
    expect(first.state).toBe('claimed');
    now = new Date(now.getTime() + 11_000);
    const retry = await withKey(key)('POST', '/api/release/deploy', body);
    expect(retry.status, retry.text).toBe(200);
    const token = first.state === 'claimed' ? first.claimToken : '';
    expect(await t.deps.store.idempotencyKeys.complete('test-admin', key, token, { late: true }, clock.now())).toBe(
      false,
    );
    expect((await t.db('idempotency_keys').where({ key }).first()).response).toEqual(retry.body);
    expect(await rows('deployments', { release_id: releaseId })).toBe(1);
  });

  it('acts again once the key is older than 24 hours', async () => {
    const { releaseId } = await releasedProject();
    const post = withKey(`expiring-${counter}`);
    const first = await post('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    now = new Date(now.getTime() + 25 * 3600 * 1000);
    const later = await post('POST', '/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(later.status, later.text).toBe(200);
    expect(later.body.deploymentIds).not.toEqual(first.body.deploymentIds);
    expect(await rows('deployments', { release_id: releaseId })).toBe(2);
  });

  it('refuses a key that is not 1 to 200 printable ASCII characters', async () => {
    const { releaseId } = await releasedProject();
    const response = await withKey('with space')('POST', '/api/release/deploy', {
      releaseId,
      environments: ['Staging'],
    });
    expect(response.status).toBe(400);
    expect(await rows('deployments', { release_id: releaseId })).toBe(0);
  });
});
