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
import { sample, type Schema } from '../../helpers/schema-samples.ts';

type Key =
  | 'workspace'
  | 'environment'
  | 'tag'
  | 'machine'
  | 'lifecycle'
  | 'phase'
  | 'project'
  | 'channel'
  | 'stepTemplate'
  | 'step'
  | 'rollingGroup'
  | 'projectVariable'
  | 'projectValue'
  | 'workspaceVariable'
  | 'workspaceValue'
  | 'scriptModule'
  | 'feed'
  | 'cloudAccount'
  | 'serviceAccount'
  | 'apiKey'
  | 'package'
  | 'release'
  | 'deployment';
type ResourceSet = Record<Key, string>;

/** Which resource an ID-looking property (lower-cased; body path or query name) points at. */
const isWorkspaceVariableRoute = (url: string) =>
  url.startsWith('/api/workspace-variable') || url === '/api/project/workspace-variable';
const KEY_OF: Record<string, Key | ((url: string) => Key)> = {
  workspaceid: 'workspace',
  environmentid: 'environment',
  environmentids: 'environment',
  environments: 'environment',
  environmentsfilter: 'environment',
  tagid: 'tag',
  tagids: 'tag',
  machineordertagids: 'tag',
  machineid: 'machine',
  machinefilter: 'machine',
  machineidfilter: 'machine',
  lifecycleid: 'lifecycle',
  phaseid: 'phase',
  projectid: 'project',
  targetprojectid: 'project',
  projectids: 'project',
  channelid: 'channel',
  channelfilter: 'channel',
  steptemplateid: 'stepTemplate',
  projectstepid: 'step',
  projectstepids: 'step',
  memberstepids: 'step',
  stepfilter: 'step',
  rollinggroupid: 'rollingGroup',
  variableid: (url) => (isWorkspaceVariableRoute(url) ? 'workspaceVariable' : 'projectVariable'),
  variableids: 'workspaceVariable',
  variablevalueid: (url) => (isWorkspaceVariableRoute(url) ? 'workspaceValue' : 'projectValue'),
  scriptmoduleid: 'scriptModule',
  scriptmoduleids: 'scriptModule',
  feedid: 'feed',
  cloudaccountid: 'cloudAccount',
  serviceaccountid: 'serviceAccount',
  apikeyid: 'apiKey',
  packageid: 'package',
  releaseid: 'release',
  deploymentid: 'deployment',
};
/** ID-looking properties that are free text, not references (a channel rule names a package ID). */
const NOT_REFERENCES = new Set(['packagerules.packageid']);
/** Settings a body needs so that its references are valid (a tag order needs TagPriority). */
const EXTRAS: Record<string, Record<string, unknown>> = {
  'POST /api/project/rolling-group': { machineOrder: 'TagPriority', waitBetweenMachineGroups: true },
  'PUT /api/project/rolling-group': { machineOrder: 'TagPriority', waitBetweenMachineGroups: true },
};
/** Valid values for required non-ID properties, so a body fails only because of its IDs. */
const VALUES: Record<string, () => unknown> = {
  url: () => 'https://packages.example.com/nuget',
  script: () => 'echo hi',
  thevalue: () => 'value',
  config: () => ({ region: 'west' }),
  roles: () => [{ role: 'View' }],
  version: () => '1.0.0',
  filename: () => 'Iso.App.1.0.0.zip',
};

let t: TestContext;
let main: ResourceSet;
let bee: ResourceSet;
let workspaceB: string;
let intruder: Client;
let counter = 0;

/** A string, or a list of strings: the only shapes an ID reference has. */
function isIdShaped(schema: Schema): boolean {
  const nonNull = schema.anyOf?.find((b) => b.type !== 'null') ?? schema;
  const type = [nonNull.type].flat()[0];
  return type === 'string' || (type === 'array' && [nonNull.items?.type].flat()[0] === 'string');
}

function keyOf(path: string, url: string): Key | null {
  if (NOT_REFERENCES.has(path.toLowerCase())) return null;
  const leaf = path.split('.').at(-1)!.toLowerCase();
  // Workspace variable values cannot be scoped to steps or channels (those belong to one project).
  if (isWorkspaceVariableRoute(url) && (leaf === 'stepfilter' || leaf === 'channelfilter')) return null;
  const found = KEY_OF[leaf];
  if (typeof found === 'function') return found(url);
  if (found) return found;
  if (/ids?$/.test(leaf) || leaf === 'environments')
    throw new Error(`no resource mapped for ID-looking property '${path}' of ${url}`);
  return null;
}

/** True when the schema holds an ID reference somewhere (then optional properties are filled too). */
function holdsReference(schema: Schema, path: string, url: string): boolean {
  if (path && isIdShaped(schema) && keyOf(path, url)) return true;
  if (schema.items) return holdsReference(schema.items, path, url);
  if (schema.anyOf) return schema.anyOf.some((s) => holdsReference(s, path, url));
  return Object.entries(schema.properties ?? {}).some(([name, s]) =>
    holdsReference(s, path ? `${path}.${name}` : name, url),
  );
}

/**
 * A valid body (or query) for the schema: every reference — required or optional — is filled by
 * `pick(path, key)`, other required properties get valid values, names are unique.
 */
function build(
  schema: Schema,
  path: string,
  url: string,
  pick: (path: string, key: Key) => string,
  slots: string[],
): unknown {
  const key = path && isIdShaped(schema) ? keyOf(path, url) : null;
  const nonNull = schema.anyOf?.find((b) => b.type !== 'null');
  if (nonNull) return build(nonNull, path, url, pick, slots);
  const type = [schema.type].flat()[0];
  if (type === 'array' && schema.items) {
    if (key) {
      slots.push(path);
      return [pick(path, key)];
    }
    return holdsReference(schema.items, path, url) || (schema.minItems ?? 0) > 0
      ? [build(schema.items, path, url, pick, slots)]
      : [];
  }
  if (key) {
    slots.push(path);
    return pick(path, key);
  }
  if (type === 'object' && schema.properties) {
    const body: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(schema.properties)) {
      const child = path ? `${path}.${name}` : name;
      const required = (schema.required ?? []).includes(name);
      if (!required && !holdsReference(property, child, url)) continue;
      const known = VALUES[name.toLowerCase()];
      if (name.toLowerCase() === 'name') body[name] = `iso-${++counter}`;
      else if (known && !(isIdShaped(property) && keyOf(child, url))) body[name] = known();
      else body[name] = build(property, child, url, pick, slots);
    }
    return body;
  }
  return sample(schema);
}

async function ok<T = any>(response: Promise<Response<T>>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** One of every resource type in a workspace, every name starting with `prefix`. */
async function createSet(workspaceId: string, prefix: string, packagePrefix: string): Promise<ResourceSet> {
  const a = t.admin;
  const environment = (await ok(a.post('/api/environment', { workspaceId, name: `${prefix}-environment` })))
    .environmentId;
  // The lifecycle uses another environment, so `environment` can still be added to a phase.
  const phaseEnvironment = (await ok(a.post('/api/environment', { workspaceId, name: `${prefix}-phase-environment` })))
    .environmentId;
  const tag = (await ok(a.post('/api/tag', { workspaceId, name: `${prefix}-tag` }))).tagId;
  const machine = (
    await ok(
      a.post('/api/machine', { workspaceId, name: `${prefix}-machine`, environmentIds: [environment], tagIds: [tag] }),
    )
  ).machineId;
  const lifecycle = (
    await ok(
      a.post('/api/lifecycle', {
        workspaceId,
        name: `${prefix}-lifecycle`,
        phases: [{ name: `${prefix}-phase`, environments: [{ environmentId: phaseEnvironment }] }],
      }),
    )
  ).lifecycleId;
  const phase = (await ok(a.get('/api/lifecycle/details', { lifecycleId: lifecycle }))).phases[0].phaseId;
  const project = (
    await ok(
      a.post('/api/project', {
        workspaceId,
        name: `${prefix}-project`,
        description: `${prefix}-description`,
        lifecycleId: lifecycle,
      }),
    )
  ).projectId;
  const channel = (
    await ok(a.post('/api/project/channel', { projectId: project, name: `${prefix}-channel`, lifecycleId: lifecycle }))
  ).channelId;
  const stepTemplate = (
    await ok(
      a.post('/api/step-template', {
        workspaceId,
        name: `${prefix}-template`,
        script: `echo ${prefix}`,
        scriptLanguage: 'bash',
      }),
    )
  ).stepTemplateId;
  const step = (
    await ok(a.post('/api/project/step', { projectId: project, name: `${prefix}-step`, stepTemplateId: stepTemplate }))
  ).projectStepId;
  // The group holds a second step, so `step` can still join a group.
  const groupedStep = (
    await ok(
      a.post('/api/project/step', { projectId: project, name: `${prefix}-grouped-step`, stepTemplateId: stepTemplate }),
    )
  ).projectStepId;
  const rollingGroup = (
    await ok(
      a.post('/api/project/rolling-group', {
        projectId: project,
        name: `${prefix}-group`,
        memberStepIds: [groupedStep],
      }),
    )
  ).rollingGroupId;
  const projectVariable = (
    await ok(a.post('/api/project/variable', { projectId: project, name: `${prefix}-variable`, variableType: 'Text' }))
  ).variableId;
  const filters = { environmentsFilter: [environment], machineFilter: [machine], tagFilter: [{ tagIds: [tag] }] };
  const projectValue = (
    await ok(
      a.post('/api/project/variable/value', {
        variableId: projectVariable,
        theValue: `${prefix}-value`,
        ...filters,
        stepFilter: [step],
        channelFilter: [channel],
      }),
    )
  ).variableValueId;
  const workspaceVariable = (
    await ok(
      a.post('/api/workspace-variable', {
        workspaceId,
        name: `${prefix}-workspace-variable`,
        variableType: 'Sensitive',
      }),
    )
  ).variableId;
  const workspaceValue = (
    await ok(
      a.post('/api/workspace-variable/value', {
        variableId: workspaceVariable,
        theValue: `${prefix}-secret`,
        ...filters,
      }),
    )
  ).variableValueId;
  await ok(a.post('/api/project/workspace-variable', { projectId: project, variableId: workspaceVariable }));
  const scriptModule = (
    await ok(
      a.post('/api/script-module', {
        workspaceId,
        name: `${prefix}-module`,
        script: `echo ${prefix}`,
        scriptLanguage: 'bash',
      }),
    )
  ).scriptModuleId;
  await ok(a.post('/api/project/script-module', { projectId: project, scriptModuleId: scriptModule }));
  const feed = (
    await ok(
      a.post('/api/feed', {
        workspaceId,
        name: `${prefix}-feed`,
        feedType: 'NuGet',
        url: `https://${prefix}.example.com/nuget`,
        password: `${prefix}-pw`,
      }),
    )
  ).feedId;
  const cloudAccount = (
    await ok(
      a.post('/api/cloud-account', {
        workspaceId,
        name: `${prefix}-cloud`,
        type: 'Azure',
        config: { tenantId: `${prefix}-tenant` },
      }),
    )
  ).cloudAccountId;
  const serviceAccount = (
    await ok(a.post('/api/service-account', { workspaceId, name: `${prefix}-account`, roles: [{ role: 'View' }] }))
  ).serviceAccountId;
  const apiKey = (await ok(a.post('/api/service-account/api-key', { serviceAccountId: serviceAccount }))).apiKeyId;
  const packageId = `${packagePrefix}.App`;
  if (t.app.routeCatalog.some((r) => r.url === '/api/packagestore/package')) {
    const { archiveFor, multipartBody } = await import('../packages/archives.ts');
    const fileName = `${packageId}.1.0.0.zip`;
    const { payload, headers } = multipartBody([
      { name: 'workspaceId', value: workspaceId },
      { name: 'PackageFile', file: { fileName, data: await archiveFor(fileName) } },
    ]);
    await ok(a.raw({ method: 'POST', path: '/api/packagestore/package', payload, headers }));
  }
  // Releases and deployments exist once their routes do (they are built in parallel).
  const has = (route: string) => t.app.routeCatalog.some((r) => `${r.method} ${r.url}` === route);
  const release = has('POST /api/release')
    ? (await ok(a.post('/api/release', { projectId: project, version: '1.0.0' }))).releaseId
    : `${prefix}-no-release`;
  const deployment = has('POST /api/release/deploy')
    ? (await ok(a.post('/api/release/deploy', { releaseId: release, environments: [`${prefix}-phase-environment`] })))
        .deploymentIds[0]
    : `${prefix}-no-deployment`;
  return {
    release,
    deployment,
    workspace: workspaceId,
    environment,
    tag,
    machine,
    lifecycle,
    phase,
    project,
    channel,
    stepTemplate,
    step,
    rollingGroup,
    projectVariable,
    projectValue,
    workspaceVariable,
    workspaceValue,
    scriptModule,
    feed,
    cloudAccount,
    serviceAccount,
    apiKey,
    package: packageId,
  };
}

/** Every row of every table, so a test can assert nothing at all changed. */
async function snapshot(): Promise<Record<string, string[]>> {
  const tables = await t.db.raw(
    "select table_name from information_schema.tables where table_schema = 'public' and table_name not like 'knex_%' order by 1",
  );
  const rows: Record<string, string[]> = {};
  for (const { table_name } of tables.rows as Array<{ table_name: string }>) {
    rows[table_name] = (await t.db(table_name).select()).map((row) => JSON.stringify(row)).sort();
  }
  return rows;
}

function queryParameters(url: string): Array<{ name: string; required: boolean; schema: Schema }> {
  const document = t.app.swagger() as {
    paths: Record<
      string,
      Record<string, { parameters?: Array<{ in: string; name: string; required?: boolean; schema: Schema }> }>
    >;
  };
  const operation = document.paths[url.replace(/:(\w+)/g, '{$1}')]?.get;
  return (operation?.parameters ?? [])
    .filter((p) => p.in === 'query')
    .map((p) => ({ name: p.name, required: p.required === true, schema: p.schema }));
}

/** A GET's query: references by `pick`, other required parameters with valid values. */
function buildQuery(
  route: RouteEntry,
  pick: (path: string, key: Key) => string,
  slots: string[],
): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const parameter of queryParameters(route.url)) {
    const key = keyOf(parameter.name, route.url);
    if (key) {
      slots.push(parameter.name);
      query[parameter.name] = pick(parameter.name, key);
    } else if (parameter.required) {
      query[parameter.name] = VALUES[parameter.name.toLowerCase()]?.() ?? sample(parameter.schema);
    }
  }
  return query;
}

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
    const sent = buildQuery(route, pick, slots);
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
  main = await createSet(t.mainWorkspaceId, 'zz-main', 'ZzMain');
  bee = await createSet(workspaceB, 'bee', 'Bee');
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
      if (route.method === 'GET') buildQuery(route, (_, key) => main[key], slots);
      else if (route.bodySchema) build(route.bodySchema, '', route.url, (_, key) => main[key], slots);
      references += slots.length;
    }
    expect(routes().length).toBeGreaterThan(80);
    expect(references).toBeGreaterThan(100);
  });

  it("refuses every route called with Main's IDs as unknown, names nothing of Main, and changes no row", async () => {
    const before = await snapshot();
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
    expect(await snapshot()).toEqual(before);
  });

  it("refuses every write that mixes one of Main's IDs into B's own references, and changes no row", async () => {
    const before = await snapshot();
    const failures: string[] = [];
    let cases = 0;
    for (const route of routes().filter((r) => !isAdminRoute(r))) {
      const slots: string[] = [];
      if (route.method === 'GET') buildQuery(route, (_, key) => bee[key], slots);
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
    expect(await snapshot()).toEqual(before);
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
