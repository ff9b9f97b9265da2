/** TLS-ready: the same gateway over TLS when certificate material is given (no database needed). */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../../services/bus/index.ts';
import { createLogger, hashSecret } from '../../../services/core/index.ts';
import { createGateway, loadAgentProto, type Gateway, type GatewayStore } from '../../../services/gateway/index.ts';
import type { AgentServiceClient } from '../../../proto/gen/gantry/agent/v1/AgentService.ts';
import { codeOf, FakeAgentPort, register } from './harness.ts';

type Machine = NonNullable<Awaited<ReturnType<GatewayStore['machines']['findByRegistrationTokenHash']>>>;
const machine: Machine = {
  id: 'machine-tls',
  workspaceId: 'ws-1',
  name: 'tls',
  tagIds: [],
  enabled: true,
  isRegistered: false,
  lastSeenUtc: null,
  disconnectedUtc: null,
  agentVersion: null,
  os: null,
  hostname: null,
  interpreters: null,
  homeFreeBytes: null,
  enrollmentKeyId: null,
  upgrade: null,
  environments: [],
};
const completed: string[] = [];
// An in-memory stand-in for the machines store: one pending token, 'good-token'.
const store: GatewayStore = {
  machines: {
    findByRegistrationTokenHash: async (hash) =>
      hash === hashSecret('good-token') && completed.length === 0 ? machine : null,
    completeRegistration: async (id, credentialHash) => {
      completed.push(`${id}:${credentialHash}`);
      return true;
    },
    findByCredentialHash: async () => null,
    findByCredentialHashes: async () => new Map(),
  },
};

let dir: string;
let bus: Bus;
let gateway: Gateway;
let boundPort: number;
let cert: Buffer;
const clients: AgentServiceClient[] = [];

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  cert = await fs.readFile(path.join(dir, 'cert.pem'));
  const key = await fs.readFile(path.join(dir, 'key.pem'));
  const logger = createLogger('silent');
  bus = await createBus({ natsUrl: null, logger });
  gateway = createGateway({
    store,
    clock: { now: () => new Date() },
    bus,
    agentPort: new FakeAgentPort(),
    logger,
    tls: { cert, key },
    heartbeat: 1000,
  });
  boundPort = await gateway.start(0, '127.0.0.1');
});

afterAll(async () => {
  for (const client of clients) client.close();
  await gateway?.stop();
  await bus?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

function client(credentials: grpc.ChannelCredentials): AgentServiceClient {
  const AgentService = loadAgentProto().gantry.agent.v1.AgentService;
  // The certificate names localhost: dial the IP, check the name (avoids Node's DEP0123 warning).
  const created = new AgentService(`127.0.0.1:${boundPort}`, credentials, {
    'grpc.ssl_target_name_override': 'localhost',
  });
  clients.push(created);
  return created;
}

describe('gateway over TLS', () => {
  it('registers an agent that trusts the server certificate', async () => {
    const response = await register(client(grpc.credentials.createSsl(cert)), { registrationToken: 'good-token' });
    expect(response.machineId).toBe('machine-tls');
    expect(completed).toEqual([`machine-tls:${hashSecret(response.agentCredential)}`]);
  });

  it('is unreachable for a client without TLS', async () => {
    const code = await codeOf(register(client(grpc.credentials.createInsecure()), { registrationToken: 'good-token' }));
    expect(code).toBe(grpc.status.UNAVAILABLE);
  });
});
