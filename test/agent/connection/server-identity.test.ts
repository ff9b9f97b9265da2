/**
 * How an agent that trusts a CA file (GANTRY_AGENT_CA_FILE) checks the control plane it dials, against a
 * real TLS HTTP/2 server with openssl-made certificates: an IP address is checked against the
 * certificate's IP entries but never sent as the TLS server name (RFC 6066; Node's DEP0123), and a
 * host name is sent and checked as before.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgentClient, waitForChannel } from '../../../agent/connection/client.ts';
import { hostCheckedCredentials } from '../../../agent/connection/pinned-ca.ts';
import { makeCertificates, type Certificates } from '../../helpers/certificates.ts';

let dir: string;
let certificates: Certificates;
const closers: Array<() => void> = [];
const warnings: string[] = [];
const onWarning = (warning: Error & { code?: string }) => warnings.push(warning.code ?? warning.message);

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'gantry-agent-tls-'));
  certificates = makeCertificates(dir);
  process.on('warning', onWarning);
});
afterAll(() => {
  process.off('warning', onWarning);
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A TLS HTTP/2 server (what a gRPC channel needs to be READY) that records the server names clients send. */
async function serve(
  cert: string,
  key: string,
): Promise<{ port: number; serverNames: Array<string | false | null>; connections: () => number }> {
  const server = http2.createSecureServer({ cert: readFileSync(cert), key: readFileSync(key) });
  const serverNames: Array<string | false | null> = [];
  let connections = 0;
  server.on('connection', () => connections++);
  server.on('secureConnection', (socket: TLSSocket) => serverNames.push(socket.servername));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return { port: (server.address() as AddressInfo).port, serverNames, connections: () => connections };
}

function dial(address: string): Promise<void> {
  const client = createAgentClient(address, hostCheckedCredentials(readFileSync(certificates.ca)));
  closers.push(() => client.close());
  return waitForChannel(client, 10_000);
}

describe('an agent trusting a CA file', () => {
  it('dials an IP named in the certificate without sending the IP as the TLS server name', async () => {
    const server = await serve(certificates.cert, certificates.key);
    await dial(`127.0.0.1:${server.port}`);
    expect(server.serverNames.length).toBeGreaterThan(0);
    // No name or the fixed one: never the IP.
    for (const name of server.serverNames)
      expect(name === false || name === null ? 'none' : name).toMatch(/^(none|[a-z-]+)$/);
    expect(warnings).not.toContain('DEP0123');
  });

  it('refuses a server dialled by IP whose certificate names only a host', async () => {
    const server = await serve(certificates.nameOnlyCert, certificates.nameOnlyKey);
    await expect(dial(`127.0.0.1:${server.port}`)).rejects.toThrow(/failed/);
    expect(server.connections()).toBeGreaterThan(0); // reached, and refused by the agent's check
  });

  it('sends and checks a host name as before', async () => {
    const server = await serve(certificates.nameOnlyCert, certificates.nameOnlyKey);
    await dial(`localhost:${server.port}`);
    expect(server.serverNames).toContain('localhost');
  });

  it('refuses a server whose certificate another CA signed', async () => {
    const server = await serve(certificates.cert, certificates.key);
    const client = createAgentClient(
      `127.0.0.1:${server.port}`,
      hostCheckedCredentials(readFileSync(certificates.otherCa)),
    );
    closers.push(() => client.close());
    await expect(waitForChannel(client, 10_000)).rejects.toThrow(/failed/);
  });
});
