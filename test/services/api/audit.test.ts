/**
 * The audit log over the route catalog: every changing route is called with real references (as
 * the isolation sweep builds them), and each answer below 400 has its event — same request ID,
 * account, address, action — written with the change; no secret the sweep saw (API keys,
 * registration tokens, Sensitive values, passwords) appears in any event. Then GET /api/audit:
 * filters, paging, and workspace scoping.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES, Capability } from '../../../services/core/index.ts';
import type { RouteEntry } from '../../../services/api/app.ts';
import { ADMIN, testApp, type Client, type Response, type TestContext } from '../../helpers/app.ts';
import { build, createResourceSet, EXTRAS, type ResourceSet } from '../../helpers/route-requests.ts';

let t: TestContext;
let main: ResourceSet;

const SECRET_FIELD = /key|token|secret|password|credential|thevalue|connectionstring/i;

/** Every string under a secret-looking property of `value` (the answers and bodies the sweep saw). */
function secretsIn(value: unknown, into: Set<string>, secretParent = false): Set<string> {
  if (typeof value === 'string') {
    if (secretParent && value.length >= 6) into.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) secretsIn(item, into, secretParent);
  } else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      // apiKeyId, tokenId …: references, not secrets.
      secretsIn(inner, into, secretParent || (SECRET_FIELD.test(key) && !/Ids?$/.test(key)));
    }
  }
  return into;
}

const CHANGES = new Set(['POST', 'PUT', 'DELETE']);
/** Streamed (multipart) or token-authenticated uploads the sweep does not build bodies for. */
const NOT_SWEPT = new Set(['POST /api/packagestore/package', 'DELETE /api/workspace']);

function changingRoutes(): RouteEntry[] {
  return t.app.routeCatalog.filter(
    (r) => CHANGES.has(r.method) && !r.isPublic && !NOT_SWEPT.has(`${r.method} ${r.url}`),
  );
}

async function send(client: Client, route: RouteEntry): Promise<{ response: Response; sent: unknown }> {
  if (!route.bodySchema) return { response: await client.raw({ method: route.method, path: route.url }), sent: null };
  const built = build(route.bodySchema, '', route.url, (_, key) => main[key], []) as Record<string, unknown>;
  const sent = { ...built, ...EXTRAS[`${route.method} ${route.url}`] };
  // Promote names its environments (the lifecycle's next phase), not their IDs.
  if (route.url === '/api/release/promote') {
    const environment = await t.db('environments').where({ id: main.environment }).first('name');
    sent.environments = [environment.name];
  }
  const method = route.method.toLowerCase() as 'post' | 'put' | 'delete';
  return { response: await client[method](route.url, sent), sent };
}

async function allEvents(): Promise<Array<Record<string, any>>> {
  return t.db('audit_events').select('*');
}

beforeAll(async () => {
  t = await testApp();
  main = await createResourceSet(t, t.mainWorkspaceId, 'audit-main', 'AuditMain');
}, 60_000);

describe('audit log', () => {
  const answered: Array<{ label: string; requestId: string; method: string }> = [];
  const secrets = new Set<string>([ADMIN.key]);

  it('records every change made through the catalog of changing routes, with no secret in it', async () => {
    // Updates first, then creations and actions, deletions last: each finds the resources alive.
    const order = (r: RouteEntry) => ({ PUT: 0, POST: 1, DELETE: 2 })[r.method as 'PUT' | 'POST' | 'DELETE'];
    const routes = changingRoutes().sort((a, b) => order(a) - order(b));
    expect(routes.length).toBeGreaterThan(50);
    for (const route of routes) {
      const { response, sent } = await send(t.admin, route);
      secretsIn(sent, secrets);
      secretsIn(response.body, secrets);
      // Signing out under HTTP Basic ends no session: nothing changed, nothing to record.
      if (response.status < 400 && route.url !== '/api/session') {
        answered.push({
          label: `${route.method} ${route.url}`,
          requestId: String(response.headers['x-request-id']),
          method: route.method,
        });
      }
    }
    // A promotion along the Default Lifecycle (the sweep's project has a lifecycle of its own).
    const lifecycles = await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId });
    const lifecycleId = lifecycles.body.lifecycles.find((l: any) => l.name === 'Default Lifecycle').lifecycleId;
    const project = await t.admin.post('/api/project', {
      workspaceId: t.mainWorkspaceId,
      name: 'Audit Promote',
      lifecycleId,
    });
    expect((await t.admin.post('/api/release', { projectId: project.body.projectId, version: '1.0.0' })).status).toBe(
      200,
    );
    const promoted = await t.admin.post('/api/release/promote', {
      projectId: project.body.projectId,
      environments: ['Staging'],
    });
    expect(promoted.status, promoted.text).toBe(200);
    answered.push({ label: 'promote', requestId: String(promoted.headers['x-request-id']), method: 'POST' });
    // Enough of the catalog really changed something for the sweep to mean it.
    expect(answered.length).toBeGreaterThan(40);
    const events = await allEvents();
    const byRequest = new Map(events.map((e) => [e.request_id as string, e]));
    const missing = answered.filter((a) => !byRequest.has(a.requestId)).map((a) => a.label);
    expect(missing).toEqual([]);
    for (const a of answered) {
      const event = byRequest.get(a.requestId)!;
      expect(event.account_id, a.label).toBe(ADMIN.id);
      expect(event.address, a.label).toBe('127.0.0.1');
      expect(event.status, a.label).toBeLessThan(400);
    }
    const text = JSON.stringify(events);
    const leaked = [...secrets].filter((secret) => text.includes(secret));
    expect(leaked).toEqual([]);
    expect(secrets.size).toBeGreaterThan(3); // the sweep did see secrets to look for
    const actions = new Set(events.map((e) => e.action as string));
    for (const action of ['create', 'update', 'delete', 'deploy', 'promote', 'cancel'])
      expect(actions).toContain(action);
  }, 120_000);

  it('records a refused change nowhere, and sign-in attempts, failed ones too, without the key', async () => {
    const before = (await allEvents()).length;
    expect((await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: '' })).status).toBe(400);
    expect((await allEvents()).length).toBe(before);

    const good = await t.anonymous.post('/api/session', { serviceAccountId: ADMIN.id, apiKey: ADMIN.key });
    expect(good.status).toBe(200);
    const bad = await t.anonymous.post('/api/session', { serviceAccountId: ADMIN.id, apiKey: 'wrong-key-123456' });
    expect(bad.status).toBe(401);
    const signIns = (await allEvents()).filter((e) => e.resource_type === 'session' && e.action.startsWith('sign-in'));
    expect(signIns.map((e) => [e.action, e.account_id, e.status]).sort()).toEqual([
      ['sign-in', ADMIN.id, 200],
      ['sign-in-failed', ADMIN.id, 401],
    ]);
    const text = JSON.stringify(await allEvents());
    expect(text).not.toContain('wrong-key-123456');
    expect(text).not.toContain(ADMIN.key);
    expect(text).not.toContain(good.body.csrfToken);
  });

  it('writes the event in the change own transaction: when the event cannot be stored, the change is not either', async () => {
    await t.db.raw(
      `alter table audit_events add constraint audit_refuses_tags check (resource_type <> 'tag') not valid`,
    );
    try {
      const response = await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'Never Stored' });
      expect(response.status).toBeGreaterThanOrEqual(500);
      expect(await t.db('tags').where({ name: 'Never Stored' }).first()).toBeUndefined();
      // A handler that answers early (reply.send()) is held until the commit, and then says it failed.
      const tag = await t.db('tags').where({ workspace_id: t.mainWorkspaceId }).first('id', 'name');
      const renamed = await t.admin.put('/api/tag', { tagId: tag.id, name: 'Renamed Never' });
      expect(renamed.status).toBeGreaterThanOrEqual(500);
      expect((await t.db('tags').where({ id: tag.id }).first('name')).name).toBe(tag.name);
    } finally {
      await t.db.raw('alter table audit_events drop constraint audit_refuses_tags');
    }
  });

  it('GET /api/audit pages and filters a workspace, and shows organization events to organization Admins only', async () => {
    const workspaceId = t.mainWorkspaceId;
    const all = await t.admin.get('/api/audit', { workspaceId, take: 500 });
    expect(all.status, all.text).toBe(200);
    expect(all.body.totalCount).toBeGreaterThan(20);
    const times = all.body.events.map((e: any) => e.occurredUtc);
    expect([...times].sort().reverse()).toEqual(times); // newest first
    expect(all.body.events.every((e: any) => e.workspaceId === workspaceId)).toBe(true);

    const page = await t.admin.get('/api/audit', { workspaceId, take: 2, skip: 1 });
    expect(page.body.events.map((e: any) => e.eventId)).toEqual(all.body.events.slice(1, 3).map((e: any) => e.eventId));
    const projects = await t.admin.get('/api/audit', { workspaceId, resourceType: 'project' });
    expect(projects.body.totalCount).toBeGreaterThan(0);
    expect(projects.body.events.every((e: any) => e.resourceType === 'project')).toBe(true);
    const one = projects.body.events[0];
    const byResource = await t.admin.get('/api/audit', { workspaceId, resourceId: one.resourceId });
    expect(byResource.body.events.every((e: any) => e.resourceId === one.resourceId)).toBe(true);
    const byAccount = await t.admin.get('/api/audit', { workspaceId, accountId: 'nobody' });
    expect(byAccount.body.totalCount).toBe(0);
    const future = await t.admin.get('/api/audit', { workspaceId, from: '2999-01-01T00:00:00Z' });
    expect(future.body.totalCount).toBe(0);
    const past = await t.admin.get('/api/audit', { workspaceId, to: '2000-01-01T00:00:00Z' });
    expect(past.body.totalCount).toBe(0);
    expect((await t.admin.get('/api/audit', { workspaceId, from: 'yesterday' })).status).toBe(400);

    // Organization-level events (sign-ins, service accounts) for the organization's Admin.
    const organization = await t.admin.get('/api/audit', { resourceType: 'session' });
    expect(organization.body.events.map((e: any) => e.action)).toEqual(
      expect.arrayContaining(['sign-in', 'sign-in-failed']),
    );

    // A workspace account sees its own workspace's events only, and no organization events.
    const other = await t.workspace('Audit Other');
    const viewer = await t.account(
      CAPABILITIES.filter((c) => c !== Capability.Admin).map((role) => ({ role })),
      other,
    );
    // Its own: the workspace, the account made for it and that account's key, nothing of Main.
    const own = await viewer.get('/api/audit', { workspaceId: other });
    expect(own.body.events.map((e: any) => [e.resourceType, e.action]).sort()).toEqual([
      ['service-account', 'create'],
      ['service-account/api-key', 'create'],
      ['workspace', 'create'],
    ]);
    const foreign = await viewer.get('/api/audit', { workspaceId });
    expect([foreign.status, foreign.body.errorcode]).toEqual([400, 3001]);
    // Without workspaceId a workspace account gets its own workspace, never organization events.
    expect((await viewer.get('/api/audit', {})).body.events).toEqual(own.body.events);
  });

  it("an update's after is its GET read inside the change's transaction: it shows the change", async () => {
    const workspaceId = await t.workspace('Audit Before Rename');
    const renamed = await t.admin.put('/api/workspace', { workspaceId, name: 'Audit After Rename' });
    expect(renamed.status, renamed.text).toBe(200);
    const event = await t
      .db('audit_events')
      .where({ request_id: String(renamed.headers['x-request-id']) })
      .first();
    const names = (shown: any) =>
      shown.workspaces.filter((w: any) => w.workspaceId === workspaceId).map((w: any) => w.name as string);
    // Before: the committed state, read before the transaction opened; after: the uncommitted change.
    expect(names(event.before)).toEqual(['Audit Before Rename']);
    expect(names(event.after)).toEqual(['Audit After Rename']);
  });

  it('gives the internal transaction header no meaning outside an open transaction', async () => {
    const workspaces = await t.admin.raw({
      method: 'GET',
      path: '/api/workspace',
      headers: { 'x-gantry-audit-transaction': '00000000-0000-4000-8000-000000000000' },
    });
    expect(workspaces.status, workspaces.text).toBe(200);
    const tag = await t.admin.raw({
      method: 'POST',
      path: '/api/tag',
      payload: JSON.stringify({ workspaceId: t.mainWorkspaceId, name: 'Header Ignored' }),
      headers: { 'content-type': 'application/json', 'x-gantry-audit-transaction': 'not-a-token' },
    });
    expect(tag.status, tag.text).toBe(200);
    expect(await t.db('tags').where({ name: 'Header Ignored' }).first()).toBeDefined();
  });
});

/**
 * One AsyncLocalStorage.run() (or any async hook) turns on V8's promise hooks for the whole
 * process for good: every await anywhere (the gateway's thousands of agents, the engine) then
 * costs about twice as much. Request-scoped deps (request.deps) replace it: none may come back.
 */
describe('no async hooks', () => {
  it('no file under services/ uses node:async_hooks or AsyncLocalStorage', async () => {
    const root = path.resolve(import.meta.dirname, '../../../services');
    const files = (await fs.readdir(root, { recursive: true })).filter((f) => /\.[cm]?[jt]s$/.test(f));
    expect(files.length).toBeGreaterThan(100);
    const offending: string[] = [];
    for (const file of files) {
      const text = await fs.readFile(path.join(root, file), 'utf8');
      if (/(['"])(node:)?async_hooks\1|\bAsyncLocalStorage\b|\bAsyncResource\b/.test(text)) offending.push(file);
    }
    expect(offending).toEqual([]);
  });
});
