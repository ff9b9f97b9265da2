import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { FakeControlPlane } from './connection/fake-control-plane.ts';
import { runTask, waitFor } from './steps/task-harness.ts';
import { isAlive } from '../helpers/processes.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: Array<() => void> = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function spawnAgent(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, [agentBundle()], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      GANTRY_AGENT_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => output };
}

describe('agent process (npm run agent)', () => {
  it('registers, runs a task, and on SIGTERM stops its running script and exits 0', async () => {
    const plane = await FakeControlPlane.start();
    cleanups.push(() => plane.stop());
    const home = mkdtempSync(path.join(tmpdir(), 'gantry-agent-proc-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const agent = spawnAgent({
      GANTRY_SERVER: plane.address,
      GANTRY_AGENT_TOKEN: 'good-token',
      GANTRY_AGENT_HOME: home,
      // The fake control plane serves plaintext; the agent must be told so.
      GANTRY_AGENT_INSECURE: '1',
      GANTRY_AGENT_SHUTDOWN_GRACE_MS: '2000',
    });

    await waitFor(() => plane.received.find((m) => m.hello), 20_000).catch((error: unknown) => {
      throw new Error(`agent did not connect: ${String(error)}\n${agent.output()}`);
    });
    expect(plane.registrations).toBe(1);
    expect(existsSync(path.join(home, 'identity.json'))).toBe(true);

    const task = runTask({
      script: 'echo "from a real agent: $Who"\necho "token visible? ${GANTRY_AGENT_TOKEN:-no}"',
      env: { Who: 'me' },
    });
    plane.send({ runTask: task });
    const result = await waitFor(() => plane.received.find((m) => m.taskResult?.taskId === task.taskId)?.taskResult);
    expect(result).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0 });
    const texts = plane.received.flatMap((m) =>
      m.logBatch?.taskId === task.taskId ? m.logBatch.lines.map((l) => l.text) : [],
    );
    expect(texts).toEqual(['from a real agent: me', 'token visible? no']);

    const long = runTask({ script: 'sleep 30 &\necho "sleeper=$!"\nwait' });
    plane.send({ runTask: long });
    const sleeperLine = await waitFor(() =>
      plane.received
        .flatMap((m) => (m.logBatch?.taskId === long.taskId ? m.logBatch.lines : []))
        .find((l) => l.text.startsWith('sleeper=')),
    );
    const sleeperPid = Number(sleeperLine.text.slice('sleeper='.length));
    expect(isAlive(sleeperPid)).toBe(true);

    const stoppedAt = Date.now();
    agent.child.kill('SIGTERM');
    const [exitCode] = (await once(agent.child, 'exit')) as [number | null];
    expect(exitCode, agent.output()).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(5000);
    // Killed with its group; allow init a moment to reap the zombie (kill(pid, 0) still sees it).
    await waitFor(() => !isAlive(sleeperPid), 2000);
    const stopped = await waitFor(() => plane.received.find((m) => m.taskResult?.taskId === long.taskId)?.taskResult);
    expect(stopped).toMatchObject({ outcome: 'FAILED', message: 'The agent stopped during the step' });
  });

  it('exits 1 with a clear message when it has neither identity nor token', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'gantry-agent-proc-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const agent = spawnAgent({ GANTRY_SERVER: '127.0.0.1:1', GANTRY_AGENT_HOME: home });
    const [exitCode] = (await once(agent.child, 'exit')) as [number | null];
    expect(exitCode).toBe(1);
    expect(agent.output()).toMatch(
      /no GANTRY_AGENT_TOKEN and no GANTRY_AGENT_ENROLLMENT_KEY: create the machine with POST \/api\/machine/,
    );
  });
});
