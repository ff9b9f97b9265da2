/**
 * Requests built from the route catalog with real references: one resource of every type in a
 * workspace (createResourceSet), and bodies and queries whose ID properties point at them (build,
 * buildQuery). Shared by the sweeps over every route (isolation, fuzz).
 */
import { expect } from 'vitest';
import type { RouteEntry } from '../../services/api/app.ts';
import type { Response, TestContext } from './app.ts';
import { sample, type Schema } from './schema-samples.ts';

export type Key =
  | 'workspace'
  | 'environment'
  | 'tag'
  | 'machine'
  | 'enrollmentKey'
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
export type ResourceSet = Record<Key, string>;

/** Which resource an ID-looking property (lower-cased; body path or query name) points at. */
const isWorkspaceVariableRoute = (url: string) =>
  url.startsWith('/api/workspace-variable') || url === '/api/project/workspace-variable';
const KEY_OF: Record<string, Key | ((url: string) => Key)> = {
  workspaceid: 'workspace',
  // GET /api/audit's filters: any resource's ID, an account's ID.
  resourceid: 'project',
  accountid: 'serviceAccount',
  environmentid: 'environment',
  environmentids: 'environment',
  environments: 'environment',
  environmentsfilter: 'environment',
  tagid: 'tag',
  tagids: 'tag',
  machineordertagids: 'tag',
  machineid: 'machine',
  machineids: 'machine',
  machinefilter: 'machine',
  machineidfilter: 'machine',
  enrollmentkeyid: 'enrollmentKey',
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
export const EXTRAS: Record<string, Record<string, unknown>> = {
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

let counter = 0;

/** A string, or a list of strings: the only shapes an ID reference has. */
export function isIdShaped(schema: Schema): boolean {
  const nonNull = schema.anyOf?.find((b) => b.type !== 'null') ?? schema;
  const type = [nonNull.type].flat()[0];
  return type === 'string' || (type === 'array' && [nonNull.items?.type].flat()[0] === 'string');
}

export function keyOf(path: string, url: string): Key | null {
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
export function holdsReference(schema: Schema, path: string, url: string): boolean {
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
export function build(
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

export async function ok<T = any>(response: Promise<Response<T>>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** One of every resource type in a workspace, every name starting with `prefix`. */
export async function createResourceSet(
  t: TestContext,
  workspaceId: string,
  prefix: string,
  packagePrefix: string,
): Promise<ResourceSet> {
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
  const enrollmentKey = (
    await ok(
      a.post('/api/machine/enrollment-key', { workspaceId, name: `${prefix}-fleet`, environmentIds: [environment] }),
    )
  ).enrollmentKeyId;
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
    const { archiveFor, multipartBody } = await import('../services/packages/archives.ts');
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
    enrollmentKey,
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
export async function snapshot(t: TestContext): Promise<Record<string, string[]>> {
  const tables = await t.db.raw(
    "select table_name from information_schema.tables where table_schema = 'public' and table_name not like 'knex_%' order by 1",
  );
  const rows: Record<string, string[]> = {};
  for (const { table_name } of tables.rows as Array<{ table_name: string }>) {
    rows[table_name] = (await t.db(table_name).select()).map((row) => JSON.stringify(row)).sort();
  }
  return rows;
}

export function queryParameters(
  t: TestContext,
  url: string,
): Array<{ name: string; required: boolean; schema: Schema }> {
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
export function buildQuery(
  t: TestContext,
  route: RouteEntry,
  pick: (path: string, key: Key) => string,
  slots: string[],
): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const parameter of queryParameters(t, route.url)) {
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
