/**
 * Simulated agents for the benches (bench/fleet, bench/throughput): machines seeded as a Register
 * would leave them, and the processes of bench/fleet/sim-agents.ts that connect as them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { AGENT_CA_FILE } from '../../services/core/index.ts';
import { waitFor } from '../../test/helpers/wait-for.ts';
import { adoptProcess, stopProcess, tempDir, type ControlPlane } from '../../test/e2e/harness.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface SimAgent {
  machineId: string;
  credential: string;
  name: string;
}

export interface Sim {
  child: ChildProcess;
  /** Index of its first agent in the list given to startSims. */
  offset: number;
  welcomed: number;
  lastWelcomeAt: number;
}

export interface SimReport {
  /** [agent index (in the whole list), RunTask arrival, result written] (ms since the epoch, sub-ms). */
  runs: Array<[number, number, number]>;
  sessionsEnded: number;
  /** Sessions that ended or could not start, by the reason the agent's code logged. */
  endReasons: Record<string, number>;
  repeatedRunTasks: number;
  welcomed: number;
  /** Heartbeats sent so far (at the interval the server's Welcome and HeartbeatPace told). */
  heartbeats: number;
}

/** Inserts `count` registered machines in the environment (tagged), in two statements. */
export async function seedSimulatedMachines(
  db: pg.Client,
  workspaceId: string,
  environmentId: string,
  count: number,
  options: { prefix?: string; tagIds?: string[] } = {},
): Promise<SimAgent[]> {
  const prefix = options.prefix ?? 'fleet';
  const agents = Array.from({ length: count }, (_, i) => ({
    machineId: `${prefix}-${randomBytes(8).toString('hex')}`,
    credential: randomBytes(24).toString('base64url'),
    name: `${prefix}-${String(i).padStart(5, '0')}`,
  }));
  await db.query(
    `insert into machines (id, workspace_id, name, agent_credential_hash, tag_ids)
     select id, $1, name, hash, $5::text[] from unnest($2::text[], $3::text[], $4::text[]) as m(id, name, hash)`,
    [
      workspaceId,
      agents.map((a) => a.machineId),
      agents.map((a) => a.name),
      agents.map((a) => createHash('sha256').update(a.credential, 'utf8').digest('hex')),
      options.tagIds ?? [],
    ],
  );
  await db.query('insert into machine_environments (machine_id, environment_id) select unnest($1::text[]), $2', [
    agents.map((a) => a.machineId),
    environmentId,
  ]);
  return agents;
}

/** Starts `processes` simulator processes sharing the agents, all connecting at once; resolves when all are welcomed. */
export async function startSims(
  plane: ControlPlane,
  agents: SimAgent[],
  processes: number,
  /**
   * taskMs: how long each simulated task takes, [min, max] ms uniformly (default: answered at once);
   * channelOptions: gRPC channel options on top of the agent's own (an A/B of its keepalive).
   */
  options: { timeoutMs?: number; taskMs?: [number, number]; channelOptions?: Record<string, number> } = {},
): Promise<{ sims: Sim[]; connectMs: number }> {
  const { timeoutMs = 300_000, taskMs = [0, 0], channelOptions = {} } = options;
  const folder = tempDir('gantry-bench-sims-');
  const caFile = path.join(plane.dataDir, AGENT_CA_FILE);
  const per = Math.ceil(agents.length / processes);
  const sims: Sim[] = [];
  const start = performance.timeOrigin + performance.now();
  for (let offset = 0; offset < agents.length; offset += per) {
    const file = path.join(folder, `sim-${offset}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        server: plane.grpcAddress,
        caFile,
        agents: agents.slice(offset, offset + per),
        taskMs,
        channelOptions,
      }),
    );
    const child = fork(path.join(here, 'sim-agents.ts'), [file], {
      execArgv: ['--max-old-space-size=4096', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    adoptProcess(child);
    const sim: Sim = { child, offset, welcomed: 0, lastWelcomeAt: 0 };
    child.on('message', (message: { type: string; count?: number; at?: number }) => {
      if (message.type === 'welcomed') {
        sim.welcomed = message.count!;
        sim.lastWelcomeAt = message.at!;
      }
    });
    sims.push(sim);
  }
  try {
    await waitFor(async () => sims.reduce((sum, sim) => sum + sim.welcomed, 0) >= agents.length, {
      timeoutMs,
      intervalMs: 200,
      description: `${agents.length} simulated agents welcomed`,
    });
  } catch (error) {
    await Promise.all(sims.map(stopSim));
    throw error;
  }
  return { sims, connectMs: Math.max(...sims.map((s) => s.lastWelcomeAt)) - start };
}

/** Every simulator's RunTasks so far, with agent indexes into the whole list. */
export async function reportSims(sims: Sim[]): Promise<SimReport> {
  const reports = await Promise.all(
    sims.map(
      (sim) =>
        new Promise<SimReport>((resolve) => {
          const onMessage = (message: SimReport & { type: string }) => {
            if (message.type !== 'report') return;
            sim.child.off('message', onMessage);
            resolve({ ...message, runs: message.runs.map(([i, at, done]) => [sim.offset + i, at, done]) });
          };
          sim.child.on('message', onMessage);
          sim.child.send({ type: 'report' });
        }),
    ),
  );
  return {
    runs: reports.flatMap((r) => r.runs),
    sessionsEnded: reports.reduce((sum, r) => sum + r.sessionsEnded, 0),
    endReasons: reports.reduce<Record<string, number>>((all, r) => {
      for (const [reason, count] of Object.entries(r.endReasons)) all[reason] = (all[reason] ?? 0) + count;
      return all;
    }, {}),
    repeatedRunTasks: reports.reduce((sum, r) => sum + r.repeatedRunTasks, 0),
    welcomed: reports.reduce((sum, r) => sum + r.welcomed, 0),
    heartbeats: reports.reduce((sum, r) => sum + r.heartbeats, 0),
  };
}

export function stopSim(sim: Sim): Promise<void> {
  return stopProcess(sim.child, 15_000, () => sim.child.send({ type: 'stop' }));
}
