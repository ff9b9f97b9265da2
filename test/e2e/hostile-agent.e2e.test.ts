/**
 * The agent trust boundary (#21), attacked from outside: a hostile client that speaks agent.proto
 * directly, holding one machine's real credential, against a real control plane (PostgreSQL +
 * NATS) with a real agent running a real step on another machine. Every attack must be refused
 * with a clear gRPC status, change no other task or deployment, and leave the control plane
 * healthy: its RSS grows at most 128 MiB and GET /api/me answers within 1 s while it lasts.
 * The suite prints one line per attack (answer, peak RSS, slowest /api/me) for the record.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeZip } from '../services/packages/archives.ts';
import { loadAgentProto, METADATA_AGENT_CREDENTIAL, METADATA_MACHINE_ID } from '../../services/gateway/index.ts';
import type { AgentServiceClient } from '../../proto/gen/gantry/agent/v1/AgentService.ts';
import type { AgentMessage } from '../../proto/gen/gantry/agent/v1/AgentMessage.ts';
import type { ServerMessage__Output } from '../../proto/gen/gantry/agent/v1/ServerMessage.ts';
import type { RunTask__Output } from '../../proto/gen/gantry/agent/v1/RunTask.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/database.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  uploadPackage,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

const MiB = 1024 * 1024;
const PACKAGE_PROPERTY = JSON.stringify([
  { Id: 'Pkg', Name: 'Package', ControlType: 'PackageSelector', DefaultValue: '' },
]);

let plane: ControlPlane;
let client: Api;
let workspaceId: string;
let staging: string;
let lifecycleId: string;
let victimId: string;
const hostile = { machineId: '', credential: '', token: '' };
let agents: AgentServiceClient;
const minePackage = randomBytes(3 * MiB);

// ---- measuring the control plane while it is attacked ----

function rssMiB(): number {
  const status = readFileSync(`/proc/${plane.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface AttackRecord {
  attack: string;
  answer: string;
  baseMiB: number;
  peakMiB: number;
  slowestMeMs: number;
}
const records: AttackRecord[] = [];

/** Runs an attack while sampling the server's RSS and timing GET /api/me; asserts both bounds. */
async function underAttack<T>(attack: string, run: () => Promise<T>, answerOf: (result: T) => string): Promise<T> {
  const baseMiB = rssMiB();
  let peakMiB = baseMiB;
  let slowestMeMs = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peakMiB = Math.max(peakMiB, rssMiB());
      await sleep(20);
    }
  })();
  const prober = (async () => {
    while (running) {
      const started = performance.now();
      const me = await client.get('/api/me');
      expect(me.status).toBe(200);
      slowestMeMs = Math.max(slowestMeMs, performance.now() - started);
      await sleep(50);
    }
  })();
  let result: T;
  try {
    result = await run();
  } finally {
    running = false;
    await Promise.all([sampler, prober]);
  }
  peakMiB = Math.max(peakMiB, rssMiB());
  const record = { attack, answer: answerOf(result), baseMiB, peakMiB, slowestMeMs };
  records.push(record);
  expect(peakMiB - baseMiB, `${attack}: server RSS growth (MiB)`).toBeLessThanOrEqual(128);
  expect(slowestMeMs, `${attack}: slowest GET /api/me (ms)`).toBeLessThanOrEqual(1000);
  return result;
}

// ---- a hostile client of agent.proto ----

function metadataOf(machineId: string, credential: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(METADATA_MACHINE_ID, machineId);
  metadata.set(METADATA_AGENT_CREDENTIAL, credential);
  return metadata;
}

function channelCredentials(): grpc.ChannelCredentials {
  return grpc.credentials.createInsecure();
}

function newClient(): AgentServiceClient {
  const AgentService = loadAgentProto().gantry.agent.v1.AgentService;
  return new AgentService(plane.grpcAddress, channelCredentials());
}

const codeName = (code: grpc.status | 'OK') => (code === 'OK' ? 'OK' : grpc.status[code]);

async function registerWith(token: string): Promise<{ code: string; machineId?: string; credential?: string }> {
  return new Promise((resolve) =>
    agents.Register({ registrationToken: token, hostname: 'evil', os: 'linux', agentVersion: '0' }, (error, reply) =>
      resolve(
        error
          ? { code: codeName(error.code) }
          : { code: 'OK', machineId: reply!.machineId, credential: reply!.agentCredential },
      ),
    ),
  );
}

/** Downloads a package with the hostile machine's credential: the status name and the bytes received. */
function download(packageId: string, version: string): Promise<{ code: string; bytes: number; details: string }> {
  return new Promise((resolve) => {
    let bytes = 0;
    const call = agents.DownloadPackage({ packageId, version }, metadataOf(hostile.machineId, hostile.credential));
    call.on('data', (chunk: { data: Buffer }) => (bytes += chunk.data.length));
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) =>
      resolve({ code: codeName(status.code), bytes, details: status.details }),
    );
  });
}

interface Session {
  received: ServerMessage__Output[];
  status: grpc.StatusObject | null;
  send(message: AgentMessage): void;
  close(): void;
}

function connect(machineId = hostile.machineId, credential = hostile.credential, on = agents): Session {
  const call = on.Connect(metadataOf(machineId, credential));
  const session: Session = {
    received: [],
    status: null,
    send: (message) => void call.write(message),
    close: () => call.cancel(),
  };
  call.on('data', (message: ServerMessage__Output) => session.received.push(message));
  call.on('status', (status: grpc.StatusObject) => (session.status = status));
  call.on('error', () => {});
  return session;
}

function hello(session: Session): void {
  session.send({ hello: { agentVersion: 'hostile', os: 'linux', hostname: 'evil' } });
}

async function runTaskOf(session: Session): Promise<RunTask__Output> {
  let task: RunTask__Output | undefined;
  await waitFor(
    async () => {
      task = session.received.find((m) => m.payload === 'runTask')?.runTask ?? undefined;
      return task !== undefined;
    },
    { timeoutMs: 20_000, intervalMs: 50, description: 'a RunTask for the hostile machine' },
  );
  return task!;
}

// ---- the world the attacks must not change ----

let victimDeploymentId: string;
let bystanderDeploymentId: string;
let hostileDeploymentId: string;
let hostileTask: RunTask__Output;
let session: Session;

/** Everything the API says about a deployment: its status, its targets and every log line. */
async function stateOf(deploymentId: string): Promise<string> {
  const deployment = await client.get('/api/deployment', { deploymentId, skipLogs: 'False' });
  const targets = await client.get('/api/deployment/targets', { deploymentId });
  return JSON.stringify({ deployment: deployment.body, targets: targets.body });
}

describe('a hostile agent with one machine’s real credential', () => {
  let bystanderBefore: string;

  beforeAll(async () => {
    plane = await startControlPlane({
      databaseUrl: (await createTestDatabase()).url,
      natsUrl: 'nats://127.0.0.1:4222',
      natsPrefix: `e2e_${randomBytes(4).toString('hex')}`,
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    staging = workspace.environments.Staging!;
    lifecycleId = workspace.defaultLifecycleId;
    ({ victim: victimId } = (await startMachines(plane, client, workspaceId, [
      { name: 'victim', environmentIds: [staging] },
    ])) as { victim: string });
    const created = await client.post('/api/machine', { workspaceId, name: 'hostile', environmentIds: [staging] });
    expect(created.status, created.text).toBe(200);
    agents = newClient();
    hostile.token = created.body.registrationToken;
    const registered = await registerWith(hostile.token);
    expect(registered.code).toBe('OK');
    hostile.machineId = registered.machineId!;
    hostile.credential = registered.credential!;

    for (const [name, data] of [
      ['Shared.1.0.0.zip', makeZip([{ name: 'shared.txt', data: Buffer.from('victim only') }])],
      ['Unused.1.0.0.zip', makeZip([{ name: 'unused.txt', data: Buffer.from('no step uses me') }])],
      ['Mine.1.0.0.zip', makeZip([{ name: 'mine.bin', data: minePackage }])],
    ] as const) {
      const uploaded = await uploadPackage(plane.url, workspaceId, name, data);
      expect(uploaded.status, uploaded.text).toBe(200);
    }

    // A finished deployment on the victim: nothing the hostile machine does may change it.
    const bystander = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Done', script: 'echo bystander finished', settings: { machineIdFilter: [victimId] } },
    ]);
    bystanderDeploymentId = (await releaseAndDeploy(client, bystander.projectId, ['Staging']))[0]!;
    expect((await waitForDeployment(client, bystanderDeploymentId!)).Status).toBe('Completed');
    bystanderBefore = await stateOf(bystanderDeploymentId!);

    // The victim runs a real step that uses package Shared until the suite ends.
    const victim = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Victim work',
        script: 'echo victim started; sleep 120',
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { machineIdFilter: [victimId], propertiesJson: JSON.stringify({ Pkg: 'Shared' }) },
      },
    ]);
    victimDeploymentId = (await releaseAndDeploy(client, victim.projectId, ['Staging']))[0]!;
    await waitFor(async () => (await logsOf(client, victimDeploymentId)).some((l) => l.Data === 'victim started'), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the victim step to start',
    });

    // The hostile machine is given a step of its own, using package Mine.
    const own = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Hostile work',
        script: 'echo never run by a real agent',
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { machineIdFilter: [hostile.machineId], propertiesJson: JSON.stringify({ Pkg: 'Mine' }) },
      },
    ]);
    hostileDeploymentId = (await releaseAndDeploy(client, own.projectId, ['Staging']))[0]!;
    session = connect();
    hello(session);
    hostileTask = await runTaskOf(session);
    expect(hostileTask.packages.map((p) => `${p.packageId}@${p.version}`)).toEqual(['Mine@1.0.0']);
  }, 120_000);

  afterAll(async () => {
    session?.close();
    agents?.close();
    for (const r of records)
      console.log(
        `[hostile] ${r.attack}: ${r.answer} | RSS ${r.baseMiB.toFixed(0)} → peak ${r.peakMiB.toFixed(0)} MiB (+${(r.peakMiB - r.baseMiB).toFixed(0)}) | slowest /api/me ${r.slowestMeMs.toFixed(0)} ms`,
      );
    await cleanup();
  });

  it('defect 1: downloads only the package versions its own running task uses', async () => {
    const answers = await underAttack(
      'DownloadPackage of another machine’s package, of an unused one, of its own',
      async () => ({
        shared: await download('Shared', '1.0.0'),
        unused: await download('Unused', '1.0.0'),
        otherVersion: await download('Mine', '0.9.0'),
        mine: await download('Mine', '1.0.0'),
      }),
      (a) => `Shared ${a.shared.code}, Unused ${a.unused.code}, Mine@0.9.0 ${a.otherVersion.code}, Mine ${a.mine.code}`,
    );
    expect(answers.shared).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.unused).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.otherVersion).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.mine.code).toBe('OK');
    expect(answers.mine.bytes).toBeGreaterThan(minePackage.length);
  });

  it('leaves every other deployment as it was', async () => {
    expect(await stateOf(bystanderDeploymentId)).toBe(bystanderBefore);
    const victim = await client.get('/api/deployment', { deploymentId: victimDeploymentId });
    expect(victim.body.status.Status).toBe('Running');
    expect((await client.get('/api/deployment', { deploymentId: hostileDeploymentId })).status).toBe(200);
  });
});
