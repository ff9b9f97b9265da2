/**
 * The real agent process against the gateway: registration, a session running a real script, and
 * SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, EventSubject, type Bus } from '../../../services/bus/index.ts';
import { createLogger } from '../../../services/core/index.ts';
import type { Gateway } from '../../../services/gateway/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { FakeAgentPort, task, testGateway } from './harness.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

let t: TestContext;
let bus: Bus;
let gateway: Gateway;
let gatewayPort: number;
let home: string;
let child: ChildProcess | null = null;
const port = new FakeAgentPort();

beforeAll(async () => {
  t = await testApp();
  bus = await createBus({ natsUrl: null, logger: createLogger('silent') });
  gateway = testGateway(t, bus, port, { heartbeat: 500 });
  gatewayPort = await gateway.start(0, '127.0.0.1');
  home = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-agent-home-'));
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await gateway?.stop();
  await bus?.close();
  if (home) await fs.rm(home, { recursive: true, force: true });
});

describe('the real agent', () => {
  it('registers, connects, runs a task with its logs and result, and exits 0 on SIGTERM when started with a token', async () => {
    const created = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'real-agent' });
    const machineId = created.body.machineId as string;
    let output = '';
    // node --import tsx (not npx): one process, so SIGTERM reaches the agent itself.
    child = spawn(process.execPath, ['--import', 'tsx', 'agent/main.ts'], {
      cwd: repoRoot,
      env: {
        ...process.env,
        GANTRY_SERVER: `127.0.0.1:${gatewayPort}`,
        GANTRY_AGENT_TOKEN: created.body.registrationToken,
        GANTRY_AGENT_HOME: home,
        // This gateway is started without TLS (createGateway's default); the agent must be told.
        GANTRY_AGENT_INSECURE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child?.on('exit', (code, signal) => resolve({ code, signal })),
    );

    // The agent's output explains most failures here, so it goes into the error message.
    const withOutput = (error: unknown): never => {
      throw new Error(`${(error as Error).message}\nagent output:\n${output}`);
    };
    const registered = await waitFor(
      async () => (await t.db('machines').where({ id: machineId }).first())?.agent_credential_hash,
      {
        timeoutMs: 20_000,
        description: 'registration',
      },
    ).catch(withOutput);
    expect(registered).toMatch(/^[0-9a-f]{64}$/);
    await waitFor(() => port.callsOf('heartbeat', machineId).length >= 2, {
      timeoutMs: 20_000,
      description: 'Hello and a Heartbeat',
    }).catch(withOutput);
    expect(gateway.connectedMachineIds()).toContain(machineId);

    // A real script through the whole session: RunTask → log lines → result, each acked.
    port.tasks.set(machineId, [task('e2e-task-1', { script: 'echo "hello from $Greeting"; echo oops >&2' })]);
    await bus.publishEvent(EventSubject.tasksDispatched('e2e-deployment'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'e2e-deployment',
      tasks: [{ taskId: 'e2e-task-1', machineId }],
    });
    const result = await waitFor(() => port.callsOf('recordResult', machineId)[0], {
      timeoutMs: 20_000,
      description: 'task result',
    }).catch(withOutput);
    expect(result?.result).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0 });
    // The real agent sends chunks (the gateway's Welcome says it reads them): one line on
    // stdout, one on stderr, in the order printed.
    const chunks = port.callsOf('recordLogs', machineId).flatMap((c) => c.chunks);
    const lines = chunks.flatMap((chunk) =>
      chunk.text
        .split('\n')
        .slice(0, chunk.lineCount)
        .map((text, i) => ({ text, stream: chunk.streams?.[i] ?? 1 })),
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        { stream: 1, text: 'hello from hi' },
        { stream: 2, text: 'oops' },
      ]),
    );

    child.kill('SIGTERM');
    const exit = await Promise.race([exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000))]);
    expect(exit, `agent did not exit on SIGTERM:\n${output}`).toEqual({ code: 0, signal: null });
    expect(output).not.toContain(created.body.registrationToken);
    await waitFor(() => !gateway.connectedMachineIds().includes(machineId), { description: 'session ended' });
  });
});
