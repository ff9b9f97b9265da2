/**
 * Sweeps every registered route: each one either declares the capability it needs or is one of
 * the few deliberate exceptions, and an account holding every other role is refused with
 * 401/2003 naming the missing capability.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES, Capability } from '../../../services/core/index.ts';
import { testApp, type Client, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

/** Routes any authenticated account may call. */
const OPEN_TO_ANY_ACCOUNT = new Set(['GET /api/me', 'GET /api/session', 'DELETE /api/session']);

function routesNeedingAuth() {
  return t.app.routeCatalog.filter((r) => !r.isPublic && !OPEN_TO_ANY_ACCOUNT.has(`${r.method} ${r.url}`));
}

async function call(client: Client, method: string, url: string) {
  switch (method) {
    case 'GET':
      return client.get(url);
    case 'POST':
      return client.post(url, {});
    case 'PUT':
      return client.put(url, {});
    case 'DELETE':
      return client.delete(url, {});
    default:
      throw new Error(`unexpected method ${method}`);
  }
}

describe('role matrix', () => {
  it('declares a capability on every non-public route', () => {
    const undeclared = routesNeedingAuth()
      .filter((r) => !r.capability)
      .map((r) => `${r.method} ${r.url}`);
    expect(undeclared).toEqual([]);
    expect(routesNeedingAuth().length).toBeGreaterThan(20);
  });

  it('refuses every route to an account lacking its capability with 401/2003', async () => {
    const accounts = new Map<string, Client>();
    const failures: string[] = [];
    for (const route of routesNeedingAuth()) {
      const needed: Capability[] = [route.capability ?? []].flat();
      const others = CAPABILITIES.filter((c) => c !== Capability.Admin && !needed.includes(c));
      const key = others.join(',');
      if (!accounts.has(key)) accounts.set(key, await t.account(others.map((role) => ({ role }))));
      const response = await call(accounts.get(key)!, route.method, route.url);
      const namesCapability = needed.some((c) => String(response.body?.error).includes(c));
      if (response.status !== 401 || response.body?.errorcode !== 2003 || !namesCapability) {
        failures.push(`${route.method} ${route.url} → ${response.status} ${response.text.slice(0, 120)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('lets an account holding the capability past the role check', async () => {
    const failures: string[] = [];
    for (const route of routesNeedingAuth()) {
      const needed: Capability[] = [route.capability ?? []].flat();
      if (needed.includes(Capability.Admin)) continue; // Admin routes: covered by the bootstrap admin's own tests
      const account = await t.account([{ role: needed[0]! }]);
      const response = await call(account, route.method, route.url);
      if (response.status === 401 || response.status >= 500)
        failures.push(`${route.method} ${route.url} → ${response.status} ${response.text.slice(0, 120)}`);
    }
    expect(failures).toEqual([]);
  });

  it('refuses credentials on every non-public route when they are missing', async () => {
    const failures: string[] = [];
    for (const route of t.app.routeCatalog.filter((r) => !r.isPublic)) {
      const response = await call(t.anonymous, route.method, route.url);
      if (response.status !== 401 || response.body?.errorcode !== 2002 || response.body?.requestid !== null) {
        failures.push(`${route.method} ${route.url} → ${response.status}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('limits a project-scoped role to its projects', async () => {
    const mine = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Mine' });
    const theirs = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Theirs' });
    const editor = await t.account([
      { role: 'EditProject', projectIds: [mine.body.projectId] },
      { role: 'View', projectIds: [mine.body.projectId] },
    ]);
    expect((await editor.put('/api/project', { projectId: mine.body.projectId, description: 'ok' })).status).toBe(200);
    const refused = await editor.put('/api/project', { projectId: theirs.body.projectId, description: 'no' });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
    const list = await editor.get('/api/project', { workspaceId: t.mainWorkspaceId });
    expect(list.body.projects.map((p: { name: string }) => p.name)).toEqual(['Mine']);
    expect((await t.db('projects').where({ id: theirs.body.projectId }).first()).description).toBeNull();
  });
});
