/**
 * Cross-workspace isolation over every resource type: an account holding every non-Admin role in
 * workspace B calls every route with the IDs of workspace Main's resources. Each call is refused
 * as "unknown ID" (400; 401 only on Admin routes) — never served, never a 500, never naming a Main
 * resource — and no stored row changes. Lists and reads in B never show anything of Main.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES, Capability } from '../../../services/core/index.ts';
import type { RouteEntry } from '../../../services/api/app.ts';
import { testApp, type Client, type Response, type TestContext } from '../../helpers/app.ts';
import {
  build,
  buildQuery,
  createResourceSet,
  EXTRAS,
  ok,
  snapshot,
  type Key,
  type ResourceSet,
} from '../../helpers/route-requests.ts';

let t: TestContext;
let main: ResourceSet;
let bee: ResourceSet;
let workspaceB: string;
let intruder: Client;
function isAdminRoute(route: RouteEntry): boolean {
  return [route.capability ?? []].flat().includes(Capability.Admin);
}

async function call(
  client: Client,
  route: RouteEntry,
  pick: (path: string, key: Key) => string,
): Promise<{ response: Response; slots: string[]; sent: unknown }> {
  const slots: string[] = [];
  if (route.method === 'GET') {
    const sent = buildQuery(t, route, pick, slots);
    return { response: await client.get(route.url, sent), slots, sent };
  }
  if (!route.bodySchema && route.url !== '/api/packagestore/package') {
    // No input at all (DELETE /api/session): nothing of Main can be sent.
    return { response: await client.raw({ method: route.method, path: route.url }), slots, sent: null };
  }
  if (!route.bodySchema) {
    // The multipart package upload: its only reference is the workspace form field.
    slots.push('workspaceId');
    const { multipartBody } = await import('../packages/archives.ts');
    const { payload, headers } = multipartBody([
      { name: 'workspaceId', value: pick('workspaceId', 'workspace') },
      {
        name: 'PackageFile',
        file: { fileName: 'Iso.App.1.0.0.zip', data: Buffer.from('not checked before the workspace') },
      },
    ]);
    return {
      response: await client.raw({ method: route.method, path: route.url, payload, headers }),
      slots,
      sent: 'multipart',
    };
  }
  const built = build(route.bodySchema, '', route.url, pick, slots) as Record<string, unknown>;
  const sent = { ...built, ...EXTRAS[`${route.method} ${route.url}`] };
  const method = route.method.toLowerCase() as 'post' | 'put' | 'delete';
  return { response: await client[method](route.url, sent), slots, sent };
}

const MAIN_NAMES = /zz-main|"Main"/i;

function routes(): RouteEntry[] {
  return t.app.routeCatalog.filter((r) => !r.isPublic);
}

beforeAll(async () => {
  t = await testApp();
  workspaceB = await t.workspace('Isolated B');
  main = await createResourceSet(t, t.mainWorkspaceId, 'zz-main', 'ZzMain');
  bee = await createResourceSet(t, workspaceB, 'bee', 'Bee');
  intruder = await t.account(
    CAPABILITIES.filter((c) => c !== Capability.Admin).map((role) => ({ role })),
    workspaceB,
  );
}, 60_000);

describe('cross-workspace isolation', () => {
  it('maps every ID-looking input of every route to a resource', () => {
    let references = 0;
    for (const route of routes()) {
      const slots: string[] = [];
      if (route.method === 'GET') buildQuery(t, route, (_, key) => main[key], slots);
      else if (route.bodySchema) build(route.bodySchema, '', route.url, (_, key) => main[key], slots);
      references += slots.length;
    }
    expect(routes().length).toBeGreaterThan(80);
    expect(references).toBeGreaterThan(100);
  });

  it("refuses every route called with Main's IDs as unknown, names nothing of Main, and changes no row", async () => {
    const before = await snapshot(t);
    const failures: string[] = [];
    for (const route of routes()) {
      const { response, slots, sent } = await call(intruder, route, (_, key) => main[key]);
      const label = `${route.method} ${route.url} ${JSON.stringify(sent).slice(0, 150)} → ${response.status} ${response.text.slice(0, 150)}`;
      if (MAIN_NAMES.test(response.text)) failures.push(`names Main: ${label}`);
      if (slots.length === 0) {
        // Nothing to point at Main (GET /api/me, GET /api/workspace, organization settings): the
        // account may read its own things, nothing else.
        if (response.status >= 500 || (response.status !== 200 && response.status !== 401)) failures.push(label);
      } else if (isAdminRoute(route)) {
        if (response.status !== 401 || response.body?.errorcode !== 2003) failures.push(label);
      } else if (response.status !== 400 || response.body?.errorcode !== 3001) {
        // Any 401 here would tell the caller the ID exists somewhere it may not act: a probe.
        failures.push(label);
      }
    }
    expect(failures).toEqual([]);
    expect(await snapshot(t)).toEqual(before);
  });

  it("refuses every write that mixes one of Main's IDs into B's own references, and changes no row", async () => {
    const before = await snapshot(t);
    const failures: string[] = [];
    let cases = 0;
    for (const route of routes().filter((r) => !isAdminRoute(r))) {
      const slots: string[] = [];
      if (route.method === 'GET') buildQuery(t, route, (_, key) => bee[key], slots);
      else if (route.bodySchema) build(route.bodySchema, '', route.url, (_, key) => bee[key], slots);
      if (slots.length < 2) continue;
      for (const foreign of slots) {
        cases++;
        const { response, sent } = await call(intruder, route, (path, key) =>
          path === foreign ? main[key] : bee[key],
        );
        const label = `${route.method} ${route.url} [${foreign} from Main] ${JSON.stringify(sent).slice(0, 200)} → ${response.status} ${response.text.slice(0, 150)}`;
        if (MAIN_NAMES.test(response.text)) failures.push(`names Main: ${label}`);
        // A GET may answer 200 when the Main ID is only a filter (no such package in B); a write never may.
        const allowed = route.method === 'GET' ? [200, 400] : [400];
        if (!allowed.includes(response.status)) failures.push(label);
      }
    }
    expect(cases).toBeGreaterThan(40);
    expect(failures).toEqual([]);
    expect(await snapshot(t)).toEqual(before);
  });

  it("shows nothing of Main on any read in B, and B's lists hold B's resources", async () => {
    const mainValues = Object.entries(main)
      .filter(([key]) => key !== 'workspace')
      .map(([, id]) => id);
    const failures: string[] = [];
    let served = 0;
    // Live event streams (a running deployment, a workspace) do not end: their refusal of Main's
    // IDs is in the sweep above, what they show in deployment-events.test.ts and dashboard.test.ts.
    const liveStreams = new Set(['/api/deployment/events', '/api/dashboard/changes']);
    for (const route of routes().filter((r) => r.method === 'GET' && !liveStreams.has(r.url))) {
      const { response, sent } = await call(intruder, route, (_, key) => bee[key]);
      const label = `GET ${route.url} ${JSON.stringify(sent)} → ${response.status} ${response.text.slice(0, 150)}`;
      if (response.status === 200) served++;
      else if (!(isAdminRoute(route) && response.status === 401)) failures.push(label);
      if (MAIN_NAMES.test(response.text)) failures.push(`names Main: ${label}`);
      const leaked = mainValues.filter((id) => response.text.includes(id));
      if (leaked.length > 0) failures.push(`shows Main IDs ${leaked.join(', ')}: ${label}`);
    }
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(20);

    const lists: Array<[string, string, string, Key]> = [
      ['/api/environment', 'environments', 'environmentId', 'environment'],
      ['/api/tag', 'tags', 'tagId', 'tag'],
      ['/api/machine', 'machines', 'machineId', 'machine'],
      ['/api/lifecycle', 'lifecycles', 'lifecycleId', 'lifecycle'],
      ['/api/project', 'projects', 'projectId', 'project'],
      ['/api/step-template', 'stepTemplates', 'stepTemplateId', 'stepTemplate'],
      ['/api/workspace-variable', 'variables', 'variableId', 'workspaceVariable'],
      ['/api/script-module', 'scriptModules', 'scriptModuleId', 'scriptModule'],
      ['/api/cloud-account', 'cloudAccounts', 'cloudAccountId', 'cloudAccount'],
    ];
    for (const [url, property, idProperty, key] of lists) {
      const list = await ok(intruder.get(url, { workspaceId: workspaceB }));
      const ids = list[property].map((item: Record<string, string>) => item[idProperty]);
      expect(ids, url).toContain(bee[key]);
      expect(
        ids.filter((id: string) => Object.values(main).includes(id)),
        url,
      ).toEqual([]);
    }
    const feeds = await ok(intruder.get('/api/feed', { workspaceId: workspaceB }));
    expect(feeds.feeds.map((f: { feedId: string }) => f.feedId)).toContain(bee.feed);
    expect(feeds.feeds.every((f: { workspaceId: string }) => f.workspaceId === workspaceB)).toBe(true);
    const workspaces = await ok(intruder.get('/api/workspace'));
    expect(workspaces.workspaces.map((w: { workspaceId: string }) => w.workspaceId)).toEqual([workspaceB]);
  });
});
