/**
 * Inside an API request's transaction, `store.transaction(fn)` runs fn on the request's own
 * transaction, with no savepoint (services/api/plugins/audit.ts): what a nested transaction wrote
 * is undone only because the whole request is. So a request that fails AFTER its nested
 * transaction wrote must store nothing: not the change, not its audit event, not its
 * Idempotency-Key claim.
 *
 * The real route: a release create (and a deploy) with an Idempotency-Key writes the release (the
 * deployments) in its nested transaction, then stores its answer on the claim; when the claim is
 * no longer its own that step answers 409 (idempotency.ts). A trigger makes the claim's completion
 * touch no row (as a takeover would), and a second trigger counts the release/deployment inserts on
 * a sequence (not transactional), so the test knows the insert did run before the failure.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let projectId: string;
const PROBE_PREFIX = 'rollback-probe-';

function withKey(key: string) {
  return (path: string, body: unknown) =>
    t.admin.raw({
      method: 'POST',
      path,
      payload: JSON.stringify(body),
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    });
}

async function inserted(): Promise<number> {
  const { rows } = await t.db.raw<{ rows: Array<{ n: string }> }>(
    'SELECT last_value - 1 + (CASE WHEN is_called THEN 1 ELSE 0 END) AS n FROM rollback_probe_inserts',
  );
  return Number(rows[0]!.n);
}

async function count(table: string, where: Record<string, unknown>): Promise<number> {
  const [row] = await t.db(table).where(where).count({ n: '*' });
  return Number(row?.n);
}

beforeAll(async () => {
  t = await testApp();
  await t.db.raw('CREATE SEQUENCE rollback_probe_inserts');
  await t.db.raw(`
    CREATE FUNCTION rollback_probe_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM nextval('rollback_probe_inserts'); RETURN NEW; END $$`);
  await t.db.raw(`CREATE TRIGGER rollback_probe_releases AFTER INSERT ON releases
    FOR EACH ROW EXECUTE FUNCTION rollback_probe_count()`);
  await t.db.raw(`CREATE TRIGGER rollback_probe_deployments AFTER INSERT ON deployments
    FOR EACH ROW EXECUTE FUNCTION rollback_probe_count()`);
  // The completion of a probe key's claim updates no row: complete() answers false, as after a takeover.
  await t.db.raw(`
    CREATE FUNCTION rollback_probe_refuse_completion() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.key LIKE '${PROBE_PREFIX}%' AND NEW.completed_at IS NOT NULL THEN RETURN NULL; END IF;
      RETURN NEW;
    END $$`);
  await t.db.raw(`CREATE TRIGGER rollback_probe_idempotency BEFORE UPDATE ON idempotency_keys
    FOR EACH ROW EXECUTE FUNCTION rollback_probe_refuse_completion()`);

  const template = await t.admin.post('/api/step-template', {
    workspaceId: t.mainWorkspaceId,
    name: 'rollback-template',
    script: 'echo hi',
    scriptLanguage: 'bash',
  });
  expect(template.status, template.text).toBe(200);
  const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'rollback' });
  expect(project.status, project.text).toBe(200);
  projectId = project.body.projectId;
  const step = await t.admin.post('/api/project/step', {
    projectId,
    name: 'Say hi',
    stepTemplateId: template.body.stepTemplateId,
  });
  expect(step.status, step.text).toBe(200);
});

afterAll(async () => {
  await t.db.raw('DROP TRIGGER IF EXISTS rollback_probe_idempotency ON idempotency_keys');
  await t.db.raw('DROP TRIGGER IF EXISTS rollback_probe_audit ON audit_events');
});

describe('a request that fails after its nested transaction wrote stores nothing', () => {
  it('POST /api/release: the release row, its audit event and its key claim are all rolled back', async () => {
    const key = `${PROBE_PREFIX}${randomUUID()}`;
    const releasesBefore = await count('releases', { project_id: projectId });
    const auditBefore = await count('audit_events', {});
    const insertsBefore = await inserted();

    const failed = await withKey(key)('/api/release', { projectId, version: '1.0.0' });
    expect(failed.status, failed.text).toBe(409);
    expect(failed.text).toContain('Idempotency-Key');
    // The release insert ran inside the request (the counter survives a rollback)…
    expect(await inserted()).toBe(insertsBefore + 1);
    // …and nothing of the request was stored.
    expect(await count('releases', { project_id: projectId })).toBe(releasesBefore);
    expect(await count('audit_events', {})).toBe(auditBefore);
    expect(await count('audit_events', { request_id: failed.body.requestid })).toBe(0);
    expect(await count('idempotency_keys', { key })).toBe(0);

    // Nothing held back: the same version is free, and a key (without the probe) works.
    const retried = await withKey(randomUUID())('/api/release', { projectId, version: '1.0.0' });
    expect(retried.status, retried.text).toBe(200);
    expect(await count('releases', { project_id: projectId, version: '1.0.0' })).toBe(1);
  });

  it('POST /api/release/deploy: the deployments and their audit event are rolled back', async () => {
    const release = await t.admin.post('/api/release', { projectId, version: '2.0.0' });
    expect(release.status, release.text).toBe(200);
    const { releaseId } = release.body;
    const auditBefore = await count('audit_events', {});
    const insertsBefore = await inserted();

    const key = `${PROBE_PREFIX}${randomUUID()}`;
    const failed = await withKey(key)('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(failed.status, failed.text).toBe(409);
    expect(await inserted()).toBeGreaterThan(insertsBefore);
    expect(await count('deployments', { release_id: releaseId })).toBe(0);
    expect(await count('audit_events', {})).toBe(auditBefore);
    expect(await count('idempotency_keys', { key })).toBe(0);

    const deployed = await withKey(randomUUID())('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(deployed.status, deployed.text).toBe(200);
    expect(await count('deployments', { release_id: releaseId })).toBe(1);
  });

  it('the same request without the probe commits all three (the probe is what failed it)', async () => {
    const key = randomUUID();
    const created = await withKey(key)('/api/release', { projectId, version: '3.0.0' });
    expect(created.status, created.text).toBe(200);
    expect(await count('releases', { id: created.body.releaseId })).toBe(1);
    expect(await count('audit_events', { resource_id: created.body.releaseId, action: 'create' })).toBe(1);
    expect(await count('idempotency_keys', { key })).toBe(1);
  });
});

/**
 * A change's audit event is its transaction's last statement, and the COMMIT is sent right behind
 * it without waiting for its answer (plugins/audit.ts, store/db.ts sendWithoutWaiting). When the
 * event fails in PostgreSQL, that COMMIT is a rollback: the answer must say nothing was saved, and
 * nothing was.
 */
describe('a change whose audit event fails in PostgreSQL', () => {
  const VERSION = '9.9.9-audit-probe';

  beforeAll(async () => {
    await t.db.raw(`
      CREATE FUNCTION rollback_probe_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.resource_type = 'release' AND EXISTS (
             SELECT 1 FROM releases WHERE id = NEW.resource_id AND version = '${VERSION}') THEN
          RAISE EXCEPTION 'audit probe: this event is refused';
        END IF;
        RETURN NEW;
      END $$`);
    await t.db.raw(`CREATE TRIGGER rollback_probe_audit BEFORE INSERT ON audit_events
      FOR EACH ROW EXECUTE FUNCTION rollback_probe_refuse_audit()`);
  });

  it('answers 500 and stores neither the release nor its event; without the probe the same create works', async () => {
    const auditBefore = await count('audit_events', {});
    const insertsBefore = await inserted();

    const failed = await t.admin.post('/api/release', { projectId, version: VERSION });
    expect(failed.status, failed.text).toBe(500);
    expect(failed.text).not.toContain('audit probe');
    // The release was inserted inside the request, before its event…
    expect(await inserted()).toBe(insertsBefore + 1);
    // …and the COMMIT behind the failed event stored nothing.
    expect(await count('releases', { project_id: projectId, version: VERSION })).toBe(0);
    expect(await count('audit_events', {})).toBe(auditBefore);

    await t.db.raw('DROP TRIGGER rollback_probe_audit ON audit_events');
    const created = await t.admin.post('/api/release', { projectId, version: VERSION });
    expect(created.status, created.text).toBe(200);
    expect(await count('releases', { id: created.body.releaseId })).toBe(1);
    expect(await count('audit_events', { resource_id: created.body.releaseId, action: 'create' })).toBe(1);
  });
});
