/**
 * A nats-server of the test's own (Debian's binary, on a free port, JetStream in a temporary
 * folder), for tests that stop and restart NATS: the machine's shared server on 4222 is never
 * touched. restart() keeps the port and the JetStream data, as a real restart would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../services/core/index.ts';
import { waitFor } from './wait-for.ts';

export interface OwnNatsServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server for good and removes its data. */
  dispose(): Promise<void>;
}

function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startOwnNatsServer(options: { jetstream?: boolean } = {}): Promise<OwnNatsServer> {
  const port = await freePort();
  const storeDir = mkdtempSync(path.join(tmpdir(), 'gantry-nats-'));
  let child: ChildProcess | null = null;
  const server: OwnNatsServer = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      const args = [
        '-a',
        '127.0.0.1',
        '-p',
        String(port),
        ...(options.jetstream === false ? [] : ['-js', '-sd', storeDir]),
      ];
      child = spawn('nats-server', args, { stdio: 'ignore' });
      await waitFor(() => portAccepts(port), { timeoutMs: 10_000, description: `nats-server on ${port}` });
    },
    async stop() {
      const running = child;
      child = null;
      if (!running || running.exitCode !== null) return;
      running.kill('SIGTERM');
      await once(running, 'exit');
    },
    async dispose() {
      await server.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
