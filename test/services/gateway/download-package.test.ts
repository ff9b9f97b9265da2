import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../../services/bus/index.ts';
import { createLogger } from '../../../services/core/index.ts';
import { MAX_CHUNK_BYTES, type PackageSource } from '../../../services/gateway/index.ts';
import type { AgentServiceClient } from '../../../proto/gen/gantry/agent/v1/AgentService.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { agentClient, agentMetadata, codeOf, FakeAgentPort, register, testGateway } from './harness.ts';

let t: TestContext;
let bus: Bus;
/** Gateways and their clients: the file's own (closed after all tests) and a test's own (after it). */
const shared: Array<() => Promise<void>> = [];
const perTest: Array<() => Promise<void>> = [];
let client: AgentServiceClient;
let otherWorkspaceId: string;
const packageBytes = randomBytes(3 * MAX_CHUNK_BYTES + 1234);
const opened: string[] = [];

// Packages held per workspace, as the package service scopes them.
const files = new Map<string, Buffer | string[]>();
const source: PackageSource = {
  async openPackage(workspaceId, packageId, version) {
    const key = `${workspaceId}/${packageId}/${version}`;
    opened.push(key);
    const content = files.get(key);
    return content ? { stream: Readable.from(Array.isArray(content) ? content : [content]) } : null;
  },
};

const port = new FakeAgentPort();

async function startGateway(
  packages: PackageSource | null,
  closers: Array<() => Promise<void>> = perTest,
): Promise<AgentServiceClient> {
  const gateway = testGateway(t, bus, port, { packages, heartbeat: 1000 });
  const created = agentClient(await gateway.start(0, '127.0.0.1'));
  closers.push(async () => {
    created.close();
    await gateway.stop();
  });
  return created;
}

beforeAll(async () => {
  t = await testApp();
  bus = await createBus({ natsUrl: null, logger: createLogger('silent') });
  client = await startGateway(source, shared);
  otherWorkspaceId = await t.workspace();
  files.set(`${t.mainWorkspaceId}/App/1.0.0`, packageBytes);
  files.set(`${t.mainWorkspaceId}/Small/2.0.0`, ['abc', 'def']);
  files.set(`${otherWorkspaceId}/Secret/1.0.0`, Buffer.from('other workspace'));
});

afterEach(async () => {
  for (const close of perTest.splice(0)) await close();
});

afterAll(async () => {
  for (const close of shared.splice(0)) await close();
  await bus?.close();
});

async function agent(on: AgentServiceClient = client) {
  const created = await t.admin.post('/api/machine', {
    workspaceId: t.mainWorkspaceId,
    name: `dl-${Math.random().toString(36).slice(2)}`,
  });
  const response = await register(on, { registrationToken: created.body.registrationToken });
  return agentMetadata(response.machineId, response.agentCredential);
}

function download(
  metadata: grpc.Metadata,
  packageId: string,
  version: string,
  on: AgentServiceClient = client,
): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const call = on.DownloadPackage({ packageId, version }, metadata);
    call.on('data', (chunk: { data: Buffer }) => chunks.push(chunk.data));
    call.on('error', reject);
    call.on('end', () => resolve(chunks));
  });
}

describe('DownloadPackage', () => {
  it('streams the package of the machine workspace in chunks of at most 64 KiB', async () => {
    const chunks = await download(await agent(), 'App', '1.0.0');
    expect(chunks.length).toBe(4);
    expect(chunks.every((c) => c.length <= MAX_CHUNK_BYTES)).toBe(true);
    expect(Buffer.concat(chunks).equals(packageBytes)).toBe(true);
    expect(opened).toContain(`${t.mainWorkspaceId}/App/1.0.0`);
  });

  it('streams string chunks from the source as bytes', async () => {
    const chunks = await download(await agent(), 'Small', '2.0.0');
    expect(Buffer.concat(chunks).toString()).toBe('abcdef');
  });

  it('answers NOT_FOUND for another workspace package and for an unknown version', async () => {
    const metadata = await agent();
    expect(await codeOf(download(metadata, 'Secret', '1.0.0'))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(download(metadata, 'App', '9.9.9'))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(download(metadata, '', ''))).toBe(grpc.status.NOT_FOUND);
    expect(opened).not.toContain(`${otherWorkspaceId}/Secret/1.0.0`);
  });

  it('answers NOT_FOUND, without opening it, for a package no task of the machine uses', async () => {
    port.refusedDownloads.add('App@1.0.0');
    try {
      const before = opened.length;
      expect(await codeOf(download(await agent(), 'App', '1.0.0'))).toBe(grpc.status.NOT_FOUND);
      expect(opened.length).toBe(before);
    } finally {
      port.refusedDownloads.clear();
    }
  });

  it('refuses with UNAUTHENTICATED when the credential is wrong', async () => {
    const metadata = await agent();
    metadata.set('x-gantry-agent-credential', 'wrong');
    const before = opened.length;
    expect(await codeOf(download(metadata, 'App', '1.0.0'))).toBe(grpc.status.UNAUTHENTICATED);
    expect(opened.length).toBe(before);
  });

  it('answers UNIMPLEMENTED when the gateway has no package source', async () => {
    const bare = await startGateway(null);
    expect(await codeOf(download(await agent(bare), 'App', '1.0.0', bare))).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('answers UNAVAILABLE when the package stream fails midway', async () => {
    const failing: PackageSource = {
      async openPackage() {
        const stream = new Readable({ read() {} });
        stream.push(Buffer.alloc(1000));
        setImmediate(() => stream.destroy(new Error('disk gone')));
        return { stream };
      },
    };
    const broken = await startGateway(failing);
    expect(await codeOf(download(await agent(broken), 'App', '1.0.0', broken))).toBe(grpc.status.UNAVAILABLE);
  });
});
