/**
 * A chatty step against a slow store (issue #19). PostgreSQL is slowed on purpose — a trigger
 * sleeps in every statement that writes log lines — while a real agent prints 600,000 lines in a
 * second or two: the backlog waits on the agent's side of flow control, so the agent is never
 * taken for lost, the server's memory stays bounded (before, it held every line as an object:
 * about 270 bytes each, 160 MiB here), and the deployment turns final only once its last line is
 * readable.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import {
  api,
  bashProject,
  cleanup,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  workspaceOf,
  type Api,
  type ControlPlane,
  type E2eLog,
} from './harness.ts';

const LOST_SECONDS = 3;
const STATEMENT_DELAY_SECONDS = 0.5;
const LINES = 600_000;
const FINAL = ['Completed', 'Failed', 'Cancelled'];

/** Resident memory of a process in MiB, from /proc. */
function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) / 1024;
}

async function slowLogWrites(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`
      create function slow_log_write() returns trigger language plpgsql as $$
      begin perform pg_sleep(${STATEMENT_DELAY_SECONDS}); return null; end $$`);
    for (const table of ['deployment_logs', 'deployment_log_chunks']) {
      await client.query(`
        do $$ begin
          if to_regclass('${table}') is not null then
            create trigger slow_log_write after insert on ${table}
              for each statement execute function slow_log_write();
          end if;
        end $$`);
    }
  } finally {
    await client.end();
  }
}

describe('a step printing 600,000 lines while the store is slowed on purpose', () => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  let staging: string;

  beforeAll(async () => {
    const database = await createTestDatabase();
    await slowLogWrites(database.url);
    plane = await startControlPlane({
      databaseUrl: database.url,
      env: { GANTRY_AGENT_LOST_TIMEOUT_SECONDS: String(LOST_SECONDS) },
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    staging = workspace.environments.Staging!;
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  it('completes without the agent counting as lost, in bounded server memory, final only after its last line', async () => {
    const ids = await startMachines(plane, client, workspaceId, [{ name: 'chatty', environmentIds: [staging] }]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Chatty',
        script: `seq 1 ${LINES} | awk '{print "line-" $0}'`,
      },
    ]);
    const baseline = rssMiB(plane.child.pid!);
    let peak = baseline;
    const machineStatuses = new Set<string>();
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(plane.child.pid!))), 50);
    const startedAt = Date.now();
    try {
      const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);

      // Watch the status alone while the backlog drains (reading pages meanwhile would mix the
      // follower's own memory into the server's), then read every line at once.
      let status = '';
      while (!FINAL.includes(status)) {
        const [read, machines] = await Promise.all([
          client.get('/api/deployment', { deploymentId: deploymentId!, skipLogs: 'True' }),
          client.get('/api/machine', { workspaceId, take: '10' }),
        ]);
        expect(read.status).toBe(200);
        status = read.body.status.Status;
        machineStatuses.add(
          machines.body.machines.find((m: { machineId: string }) => m.machineId === ids.chatty).status,
        );
        expect(Date.now() - startedAt).toBeLessThan(240_000);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      clearInterval(sampler);
      const seconds = (Date.now() - startedAt) / 1000;
      const logs: E2eLog[] = [];
      let after: string | null = null;
      for (;;) {
        const query: Record<string, string> = { deploymentId: deploymentId! };
        if (after !== null) query.getLogsAfter = after;
        const page = (await client.get('/api/deployment', query)).body.logs as E2eLog[];
        if (page.length === 0) break;
        logs.push(...page);
        after = page.at(-1)!.CreatedUtcTick;
      }

      expect(status).toBe('Completed');
      // The store was slow enough that the old rule (a heartbeat queued behind the lines) lost the agent.
      expect(seconds).toBeGreaterThan(2 * LOST_SECONDS);
      expect(logs.some((l) => /Lost contact|went offline/.test(l.Data))).toBe(false);
      expect([...machineStatuses]).toEqual(['Online']);

      // Every line readable when the status turned final, once, in order, with increasing ticks.
      const lines = logs.filter((l) => l.Data.startsWith('line-'));
      expect(lines.length).toBe(LINES);
      expect(lines.every((l, i) => l.Data === `line-${i + 1}`)).toBe(true);
      for (let i = 1; i < logs.length; i++)
        expect(BigInt(logs[i]!.CreatedUtcTick)).toBeGreaterThan(BigInt(logs[i - 1]!.CreatedUtcTick));
      // The final entries carry the last ticks: nothing of the script comes after the deployment's end.
      const lastLine = logs.lastIndexOf(lines.at(-1)!);
      expect(logs.slice(lastLine + 1).some((l) => l.Data.startsWith('line-'))).toBe(false);
      expect(logs.at(-1)!.Data).toMatch(/deploy/i);

      // The backlog waited on the agent's side: the server grew by far less than holding it would take.
      const growth = peak - baseline;
      console.log(
        `${LINES} lines in ${seconds.toFixed(1)} s; server RSS ${baseline.toFixed(0)} → ${peak.toFixed(0)} MiB`,
      );
      expect(growth).toBeLessThan(128);
    } finally {
      clearInterval(sampler);
    }
  }, 300_000);
});
