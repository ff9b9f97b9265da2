/**
 * A deployment's plan is stored as json, lz4-compressed where the server supports lz4 (migration
 * 202611270900): it must come back exactly as written, large or not.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;

beforeAll(async () => {
  t = await testApp();
});

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** Whether this PostgreSQL was built with lz4 (Debian's is; the embedded one is not). */
async function serverHasLz4(): Promise<boolean> {
  try {
    await t.db.raw('CREATE TEMP TABLE lz4_probe (value text COMPRESSION lz4)');
    await t.db.raw('DROP TABLE lz4_probe');
    return true;
  } catch {
    return false;
  }
}

describe('deployment plans', () => {
  it('are json, compressed with lz4 where the server has it', async () => {
    const column = await t
      .db('pg_attribute')
      .where({ attrelid: t.db.raw("'deployments'::regclass"), attname: 'plan' })
      .first(t.db.raw('format_type(atttypid, atttypmod) AS type'), 'attcompression');
    expect(column.type).toBe('json');
    expect(column.attcompression).toBe((await serverHasLz4()) ? 'l' : '');
  });

  it('come back exactly as stored, a 10,000-machine one included', async () => {
    const { lifecycles } = await ok(t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId }));
    const project = await ok(
      t.admin.post('/api/project', {
        workspaceId: t.mainWorkspaceId,
        name: `Plan-${Date.now()}`,
        lifecycleId: lifecycles[0].lifecycleId,
      }),
    );
    const release = await ok(t.admin.post('/api/release', { projectId: project.projectId, version: '1.0.0' }));
    const [deploymentId] = (
      await ok(t.admin.post('/api/release/deploy', { releaseId: release.releaseId, environments: ['Staging'] }))
    ).deploymentIds;
    const machines = Array.from({ length: 10_000 }, (_, i) => ({
      machineId: `m-${i}`,
      machineName: `web-${String(i).padStart(5, '0')} "ü"`,
      tagIds: i % 2 ? ['a'] : [],
    }));
    const plan = { environmentId: 'env', stages: [{ kind: 'step', stepId: 's', machines, skip: null }] };
    await t.deps.store.deployments.update(deploymentId, { plan }, new Date());
    expect(await t.deps.store.deployments.getPlan(deploymentId)).toEqual(plan);
  });
});
