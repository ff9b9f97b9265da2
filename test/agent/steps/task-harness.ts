// A TaskManager on a temp GANTRY_AGENT_HOME with a fake link that records what would be sent.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import type { AgentMessage, LogLine, RunTask, TaskResult } from '../../../agent/connection/proto.ts';
import type { AgentLink } from '../../../agent/connection/session-handler.ts';
import { PackageCache, type PackageSource } from '../../../agent/steps/package-cache.ts';
import { TaskJournal } from '../../../agent/steps/task-journal.ts';
import { TaskManager, type TaskManagerOptions } from '../../../agent/steps/task-manager.ts';

export class FakeLink implements AgentLink {
  readonly sent: AgentMessage[] = [];
  connected = true;

  trySend(message: AgentMessage): boolean {
    if (!this.connected) return false;
    this.sent.push(message);
    return true;
  }

  lines(taskId: string): LogLine[] {
    return this.sent.flatMap((m) => (m.logBatch?.taskId === taskId ? (m.logBatch.lines ?? []) : []));
  }

  results(taskId: string): TaskResult[] {
    return this.sent.flatMap((m) => (m.taskResult?.taskId === taskId ? [m.taskResult] : []));
  }
}

export interface Harness {
  readonly home: string;
  readonly link: FakeLink;
  readonly journal: TaskJournal;
  manager: TaskManager;
  /** A new TaskManager on the same home, as after an agent restart. */
  restart(): TaskManager;
  downloads: number;
  close(): Promise<void>;
}

export function createHarness(
  packages: Record<string, Buffer> = {},
  options: Pick<TaskManagerOptions, 'retentionMs' | 'pruneEveryMs' | 'now'> = {},
): Harness {
  const home = mkdtempSync(path.join(tmpdir(), 'gantry-agent-home-'));
  const link = new FakeLink();
  const source: PackageSource = {
    download(packageId, version) {
      harness.downloads++;
      const bytes = packages[`${packageId}@${version}`];
      if (!bytes)
        return new Readable({
          read() {
            this.destroy(new Error(`no package ${packageId} ${version}`));
          },
        });
      return Readable.from([bytes]);
    },
  };
  const journal = new TaskJournal(path.join(home, 'tasks'));
  const build = (): TaskManager => {
    const manager = new TaskManager({
      journal,
      packages: new PackageCache(path.join(home, 'packages'), source, options.now),
      workRoot: path.join(home, 'work'),
      scriptsRoot: path.join(home, 'scripts'),
      baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      logger: pino({ level: 'silent' }),
      flushIntervalMs: 20,
      ...options,
    });
    manager.attach(link);
    return manager;
  };
  const harness: Harness = {
    home,
    link,
    journal,
    manager: build(),
    downloads: 0,
    restart() {
      harness.manager = build();
      return harness.manager;
    },
    async close() {
      await harness.manager.shutdown(200);
      rmSync(home, { recursive: true, force: true });
    },
  };
  return harness;
}

let counter = 0;

export function runTask(overrides: Partial<RunTask> = {}): RunTask {
  counter++;
  return {
    taskId: `task-${process.pid}-${counter}`,
    deploymentId: 'deployment-1',
    stepName: 'Step',
    script: 'echo hello',
    scriptLanguage: 'bash',
    env: {},
    sensitiveValues: [],
    packages: [],
    redownloadPackages: false,
    timeoutSeconds: 0,
    packageFolderToken: '',
    ...overrides,
  };
}

export async function waitFor<T>(probe: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('waitFor: condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
