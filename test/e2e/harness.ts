/**
 * End-to-end harness: control planes and agents as real processes on loopback, driven over the
 * public HTTP API — exactly what an operator and a CI pipeline do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { AGENT_CA_FILE, freePort, loadAgentTls } from '../../services/core/index.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const ADMIN = { id: 'e2e-admin', key: 'e2e-admin-key-0123456789abcdef' };

const processes: ChildProcess[] = [];
const folders: string[] = [];

/**
 * Processes (agents, control planes) a test body started, not a beforeAll: stopped after that
 * test, so none outlives it (test/setup/leak-check.ts fails a test that leaves one running).
 */
const testProcesses: ChildProcess[] = [];
let inTest = false;
// Only under vitest: bench/ scripts use this harness too.
if (process.env.VITEST) {
  beforeEach(() => {
    inTest = true;
  });
  afterEach(async () => {
    inTest = false;
    for (const child of testProcesses.splice(0)) await stopProcess(child);
  });
}

// Only for bench/ scripts: a bench stopped by a signal, or ending through process.exit before its
// cleanup, left its control planes (with their embedded PostgreSQL) and its agents running,
// idle beside whatever was measured next. A signal now cleans up first (a second one kills at
// once, the default again), and at exit whatever still runs is sent SIGTERM (the exit hook cannot
// wait: each stops on its own, a plane with its PostgreSQL). Vitest has its own leak check.
if (!process.env.VITEST) {
  process.once('exit', () => {
    for (const child of processes) if (isRunning(child)) child.kill('SIGTERM');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => void cleanup().finally(() => process.exit(128 + osConstants.signals[signal])));
  }
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** A process a bench started itself (a bare server, sshd): stopped by cleanup() and at exit as the harness's own. */
export function adoptProcess(child: ChildProcess): void {
  processes.push(child);
}

/** Stops every process and removes every folder the harness made. Call from afterAll. */
export async function cleanup(): Promise<void> {
  // Stopped, not killed: a control plane killed outright leaves its embedded PostgreSQL running
  // (until it finds its folder gone, up to a minute later) beside the test files after it.
  await Promise.all(processes.splice(0).map((child) => stopProcess(child)));
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
}

/**
 * Stops one process the harness started and waits for its exit: SIGTERM (or `ask`, e.g. a message
 * over its IPC channel), then SIGKILL after `graceMs` (a process writing a large --cpu-prof on
 * exit needs longer than the default 5 s).
 */
export async function stopProcess(
  child: ChildProcess,
  graceMs = 5_000,
  ask: () => void = () => child.kill('SIGTERM'),
): Promise<void> {
  if (!isRunning(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  ask();
  const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(kill);
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  // The embedded PostgreSQL runs as another user and must traverse into the data folder.
  chmodSync(dir, 0o755);
  folders.push(dir);
  return dir;
}

function spawnNode(
  args: string[],
  env: Record<string, string>,
  forFile = false,
): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  processes.push(child);
  if (inTest && !forFile) testProcesses.push(child);
  return { child, output: () => output };
}

/**
 * One agent CA for every control plane of this test process, as replicas sharing a data folder
 * share theirs: written into each plane's data folder before it starts, so agents pin one
 * fingerprint (startAgent's default, as the registration answer tells a user) across replicas.
 */
let harnessCa: { pem: string; fingerprint: string } | null = null;
/** Made once even when planes start together (Promise.all): they must not each make a CA. */
let harnessCaMade: Promise<{ pem: string; fingerprint: string }> | null = null;

function sharedAgentCa(): Promise<{ pem: string; fingerprint: string }> {
  harnessCaMade ??= (async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-e2e-ca-'));
    try {
      const { caFingerprint } = await loadAgentTls({ dataDir: dir, names: [] });
      harnessCa = { pem: readFileSync(path.join(dir, AGENT_CA_FILE), 'utf8'), fingerprint: caFingerprint };
      return harnessCa;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return harnessCaMade;
}

export interface ControlPlane {
  url: string;
  /** GET /metrics of this replica (its own free port), or null with GANTRY_METRICS_PORT=off. */
  metricsUrl: string | null;
  grpcAddress: string;
  /** The fingerprint agents pin (null: plaintext, the operator's certificates, or a CA of its own). */
  caFingerprint: string | null;
  dataDir: string;
  child: ChildProcess;
  output: () => string;
}

export async function startControlPlane(
  options: {
    databaseUrl?: string;
    natsUrl?: string;
    natsPrefix?: string;
    dataDir?: string;
    env?: Record<string, string>;
    /** Fixed ports (a replica restarted where its agents expect it); free ones otherwise. */
    ports?: { http: number; grpc: number };
    /** Extra node flags (a bench's --cpu-prof). */
    nodeArgs?: string[];
    /** 'own': the plane creates its CA at first start, as a fresh install does (else the run's shared one). */
    agentCa?: 'shared' | 'own';
    /** Arguments of services/main.ts (npm start -- …), e.g. --local-agent. */
    args?: string[];
    /** Started by a test for the tests after it too (a replaced replica): stopped by cleanup(), not after the test. */
    forFile?: boolean;
  } = {},
): Promise<ControlPlane> {
  // Each differs from those before it (the plane refuses one port for two servers).
  const taken: number[] = [];
  const pick = async (given?: number) => {
    const port = given ?? (await freePort(taken));
    taken.push(port);
    return port;
  };
  const httpPort = await pick(options.ports?.http);
  const grpcPort = await pick(options.ports?.grpc);
  const metricsPort = await pick();
  const dataDir = options.dataDir ?? tempDir('gantry-e2e-data-');
  const env: Record<string, string> = {
    // Replicas on one host each need their own (the default 9464 would be taken by the first).
    GANTRY_METRICS_PORT: String(metricsPort),
    GANTRY_PORT: String(httpPort),
    GANTRY_GRPC_PORT: String(grpcPort),
    GANTRY_HOST: '127.0.0.1',
    GANTRY_DATA_DIR: dataDir,
    GANTRY_BOOTSTRAP_ACCOUNT_ID: ADMIN.id,
    GANTRY_BOOTSTRAP_API_KEY: ADMIN.key,
    GANTRY_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
    GANTRY_LOG_LEVEL: 'warn',
  };
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
  if (options.natsUrl) env.NATS_URL = options.natsUrl;
  if (options.natsPrefix) env.GANTRY_NATS_PREFIX = options.natsPrefix;
  Object.assign(env, options.env);
  // TLS by default, as `npm start` serves it: with the run's shared CA unless the plane has one.
  let caFingerprint: string | null = null;
  if (env.GANTRY_GRPC_INSECURE !== '1' && !env.GANTRY_GRPC_TLS_CERT_FILE && options.agentCa !== 'own') {
    const ca = await sharedAgentCa();
    const file = path.join(dataDir, AGENT_CA_FILE);
    // A data folder the caller named may not exist yet (bench/chaos names one per replica): the
    // control plane would create it, but the CA goes in first (0755 as tempDir's: the embedded
    // PostgreSQL runs as another user).
    mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    if (!existsSync(file)) writeFileSync(file, ca.pem, { mode: 0o600 });
    caFingerprint = ca.fingerprint;
  }
  // As `npm start` runs it (its default GANTRY_HEAP_MB): the heap limit also sets how far V8 lets
  // garbage pile up between full collections (4× the live heap from a 2 GiB limit up).
  const { child, output } = spawnNode(
    [
      '--max-old-space-size=1536',
      ...(options.nodeArgs ?? []),
      '--import',
      'tsx',
      'services/main.ts',
      ...(options.args ?? []),
    ],
    env,
    options.forFile,
  );
  const url = `http://127.0.0.1:${httpPort}`;
  const listening = await waitFor(
    async () => {
      // An early exit ends the wait at once (a throw here would only be retried until the timeout).
      if (child.exitCode !== null) return 'exited';
      const response = await fetch(`${url}/api/openapi.json`).catch(() => null);
      return response?.ok === true && 'listening';
    },
    { timeoutMs: 60_000, intervalMs: 200, description: 'control plane to listen' },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${output()}`);
  });
  if (listening === 'exited') throw new Error(`control plane exited early:\n${output()}`);
  const metricsUrl = env.GANTRY_METRICS_PORT === 'off' ? null : `http://127.0.0.1:${env.GANTRY_METRICS_PORT}/metrics`;
  return { url, metricsUrl, grpcAddress: `127.0.0.1:${grpcPort}`, caFingerprint, dataDir, child, output };
}

export interface Agent {
  home: string;
  child: ChildProcess;
  output: () => string;
}

/**
 * Starts a real agent. It pins the run's shared CA (the fingerprint the registration answer
 * carries) unless `env` says how it trusts the server (GANTRY_AGENT_CA_FILE, _CA_FINGERPRINT or
 * GANTRY_AGENT_INSECURE=1).
 */
export function startAgent(
  servers: string[],
  token: string,
  env: Record<string, string> = {},
  /** Extra node flags (a bench's --cpu-prof). */
  nodeArgs: string[] = [],
): Agent {
  const home = tempDir('gantry-e2e-agent-');
  const trustSaid = ['GANTRY_AGENT_CA_FILE', 'GANTRY_AGENT_CA_FINGERPRINT', 'GANTRY_AGENT_INSECURE'].some(
    (name) => name in env,
  );
  const { child, output } = spawnNode([...nodeArgs, agentBundle()], {
    ...(trustSaid || !harnessCa ? {} : { GANTRY_AGENT_CA_FINGERPRINT: harnessCa.fingerprint }),
    GANTRY_SERVER: servers.join(','),
    GANTRY_AGENT_TOKEN: token,
    GANTRY_AGENT_HOME: home,
    GANTRY_AGENT_LOG_LEVEL: 'warn',
    GANTRY_AGENT_SHUTDOWN_GRACE_MS: '2000',
    ...env,
  });
  return { home, child, output };
}

/** The Authorization header of HTTP Basic for a service account's ID and API key. */
export function basicAuthorization(credentials = ADMIN): string {
  return `Basic ${Buffer.from(`${credentials.id}:${credentials.key}`).toString('base64')}`;
}

/** A minimal HTTP client of the public API, as a pipeline would use it. */
export function api(baseUrl: string, credentials = ADMIN) {
  const authorization = basicAuthorization(credentials);
  const call = async (method: string, route: string, body?: unknown, query?: Record<string, string>) => {
    const url = new URL(`${baseUrl}${route}`);
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
    const response = await fetch(url, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    // Ticks exceed 2^53: keep them exact by reading integer literals of 16+ digits as strings.
    const json = text ? JSON.parse(text.replace(/:(\d{16,})([,}\]])/g, ':"$1"$2')) : null;
    return { status: response.status, body: json, text };
  };
  return {
    get: (route: string, query?: Record<string, string>) => call('GET', route, undefined, query),
    post: (route: string, body?: unknown) => call('POST', route, body ?? {}),
    put: (route: string, body?: unknown) => call('PUT', route, body ?? {}),
    delete: (route: string, body?: unknown) => call('DELETE', route, body ?? {}),
  };
}

export type Api = ReturnType<typeof api>;

export async function waitForDeployment(client: Api, deploymentId: string, timeoutMs = 60_000) {
  return waitFor(
    async () => {
      const response = await client.get('/api/deployment', { deploymentId, skipLogs: 'True' });
      if (response.status !== 200) throw new Error(`GET /api/deployment answered ${response.status}: ${response.text}`);
      return ['Completed', 'Failed', 'Cancelled'].includes(response.body?.status?.Status) ? response.body.status : null;
    },
    { timeoutMs, intervalMs: 200, description: `deployment ${deploymentId} to finish` },
  );
}

/** The first workspace's ID, the IDs of its environments by name and of its Default Lifecycle. */
export async function workspaceOf(
  client: Api,
): Promise<{ workspaceId: string; environments: Record<string, string>; defaultLifecycleId: string }> {
  const workspaceId = (await client.get('/api/workspace')).body.workspaces[0].workspaceId as string;
  const [environments, lifecycles] = await Promise.all([
    client.get('/api/environment', { workspaceId }),
    client.get('/api/lifecycle', { workspaceId }),
  ]);
  const list = environments.body.environments as Array<{ environmentId: string; name: string }>;
  const defaultLifecycle = (lifecycles.body.lifecycles as Array<{ lifecycleId: string; name: string }>).find(
    (l) => l.name === 'Default Lifecycle',
  );
  if (!defaultLifecycle) throw new Error(`Workspace ${workspaceId} has no Default Lifecycle`);
  return {
    workspaceId,
    environments: Object.fromEntries(list.map((e) => [e.name, e.environmentId])),
    defaultLifecycleId: defaultLifecycle.lifecycleId,
  };
}

/** The agents startMachines started, by machine name (their output helps when a test fails). */
export const startedAgents = new Map<string, Agent>();

/** Creates the machines, starts one real agent per machine and waits until all are Online. Returns name → machineId. */
export async function startMachines(
  plane: ControlPlane,
  client: Api,
  workspaceId: string,
  machines: Array<{ name: string; environmentIds: string[]; tagIds?: string[] }>,
): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const m of machines) {
    const created = await client.post('/api/machine', {
      workspaceId,
      name: m.name,
      environmentIds: m.environmentIds,
      tagIds: m.tagIds ?? [],
    });
    if (created.status !== 200) throw new Error(`POST /api/machine answered ${created.status}: ${created.text}`);
    ids[m.name] = created.body.machineId;
    startedAgents.set(m.name, startAgent([plane.grpcAddress], created.body.registrationToken));
  }
  await waitFor(
    async () => {
      const list = (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
        machineId: string;
        status: string;
      }>;
      return Object.values(ids).every((id) => list.some((m) => m.machineId === id && m.status === 'Online'));
    },
    { timeoutMs: 60_000, intervalMs: 250, description: `${machines.length} agents online` },
  );
  return ids;
}

export interface E2eStep {
  name: string;
  script: string;
  /** Step-template properties (JSON text), e.g. a PackageSelector. */
  propertiesRaw?: string;
  /** Fields for PUT /api/project/step (errorAction, machineTagFilter, propertiesJson …). */
  settings?: Record<string, unknown>;
}

let projectCounter = 0;

/** A project whose steps each run one bash script from a template of its own. Returns the project and its step IDs by name. */
export async function bashProject(
  client: Api,
  workspaceId: string,
  lifecycleId: string,
  steps: E2eStep[],
): Promise<{ projectId: string; stepIds: Record<string, string> }> {
  const suffix = `${process.pid}-${++projectCounter}-${Math.random().toString(16).slice(2, 8)}`;
  const project = await client.post('/api/project', { workspaceId, name: `E2E ${suffix}`, lifecycleId });
  if (project.status !== 200) throw new Error(`POST /api/project answered ${project.status}: ${project.text}`);
  const projectId = project.body.projectId as string;
  const stepIds: Record<string, string> = {};
  for (const s of steps) {
    const template = await client.post('/api/step-template', {
      workspaceId,
      name: `tpl ${suffix} ${s.name}`,
      script: s.script,
      scriptLanguage: 'bash',
      ...(s.propertiesRaw === undefined ? {} : { propertiesRaw: s.propertiesRaw }),
    });
    if (template.status !== 200)
      throw new Error(`POST /api/step-template answered ${template.status}: ${template.text}`);
    const step = await client.post('/api/project/step', {
      projectId,
      name: s.name,
      stepTemplateId: template.body.stepTemplateId,
    });
    if (step.status !== 200) throw new Error(`POST /api/project/step answered ${step.status}: ${step.text}`);
    stepIds[s.name] = step.body.projectStepId;
    if (s.settings) {
      const updated = await client.put('/api/project/step', { projectStepId: step.body.projectStepId, ...s.settings });
      if (updated.status !== 200) throw new Error(`PUT /api/project/step answered ${updated.status}: ${updated.text}`);
    }
  }
  return { projectId, stepIds };
}

/** Creates a release of the project and deploys it to the environments; returns the deployment IDs. */
export async function releaseAndDeploy(
  client: Api,
  projectId: string,
  environments: string[],
  version = '1.0.0',
): Promise<string[]> {
  const release = await client.post('/api/release', { projectId, version });
  if (release.status !== 200) throw new Error(`POST /api/release answered ${release.status}: ${release.text}`);
  const deployed = await client.post('/api/release/deploy', { releaseId: release.body.releaseId, environments });
  if (deployed.status !== 200)
    throw new Error(`POST /api/release/deploy answered ${deployed.status}: ${deployed.text}`);
  return deployed.body.deploymentIds as string[];
}

export interface E2eLog {
  Data: string;
  LogLevel: string;
  CreatedUtcTick: string;
  ParentLogId: string | null;
  StepId: string | null;
}

export async function logsOf(client: Api, deploymentId: string): Promise<E2eLog[]> {
  return (await client.get('/api/deployment', { deploymentId, skipLogs: 'False' })).body.logs;
}

/** `step name → machine name → target status` from GET /api/deployment/targets. */
export async function targetStatuses(
  client: Api,
  deploymentId: string,
): Promise<Record<string, Record<string, string>>> {
  const response = await client.get('/api/deployment/targets', { deploymentId });
  if (response.status !== 200)
    throw new Error(`GET /api/deployment/targets answered ${response.status}: ${response.text}`);
  const out: Record<string, Record<string, string>> = {};
  for (const step of response.body.steps as Array<{
    name: string;
    targets: Array<{ machineName: string | null; status: string }>;
  }>) {
    out[step.name] = Object.fromEntries(step.targets.map((t) => [t.machineName ?? '', t.status]));
  }
  return out;
}

/**
 * The engine's replica ID (the value it writes to deployments.lease_owner), read from its
 * 'engine started' log line: start the control plane with env GANTRY_LOG_LEVEL=info.
 */
export function replicaIdOf(plane: ControlPlane): string {
  const match = /"replicaId":"([^"]+)"[^\n]*"msg":"engine started"/.exec(plane.output());
  if (!match?.[1])
    throw new Error(`no 'engine started' line in the control plane output:\n${plane.output().slice(0, 2000)}`);
  return match[1];
}

/** Uploads a package file with a real multipart/form-data request, as a CI pipeline does (spec §4.6). */
export async function uploadPackage(
  baseUrl: string,
  workspaceId: string,
  fileName: string,
  data: Buffer,
  credentials = ADMIN,
) {
  const form = new FormData();
  form.append('workspaceId', workspaceId);
  form.append('PackageFile', new Blob([new Uint8Array(data)]), fileName);
  const response = await fetch(`${baseUrl}/api/packagestore/package`, {
    method: 'POST',
    headers: { authorization: basicAuthorization(credentials) },
    body: form,
  });
  const text = await response.text();
  return { status: response.status, text, body: text ? JSON.parse(text) : null };
}
