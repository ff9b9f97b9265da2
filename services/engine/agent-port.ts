/**
 * What the agent gateway (services/gateway/) asks of the engine. The gateway speaks gRPC and
 * holds agent streams; the engine owns every decision and every write. Each call is idempotent,
 * because an agent re-sends after any reconnect and may reach a different replica.
 */

/** One task (a step on one machine) as the agent runs it: everything already resolved. */
export interface RunTaskPayload {
  taskId: string;
  deploymentId: string;
  stepName: string;
  script: string;
  scriptLanguage: 'bash' | 'sh' | 'python' | 'powershell';
  /** The step's resolved variables and system values. */
  env: Record<string, string>;
  /** Values the agent masks as ******** in every line it sends. */
  sensitiveValues: string[];
  packages: Array<{ packageId: string; version: string; sha256: string; sizeBytes: number; format: string }>;
  redownloadPackages: boolean;
  /** 0: no timeout. */
  timeoutSeconds: number;
}

export interface AgentLogLine {
  /** Per task, from 1, no gaps: a line re-sent after a reconnect is stored once. */
  seq: number;
  stream: 'STDOUT' | 'STDERR' | 'SYSTEM';
  text: string;
  /** When the agent read the line (Unix epoch nanoseconds, as a decimal string: exceeds 2^53). */
  unixNanos: string;
}

export interface AgentTaskResult {
  outcome: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  exitCode: number;
  message: string;
  lastLogSeq: number;
}

export interface AgentInfo {
  agentVersion?: string;
  os?: string;
  hostname?: string;
}

export interface AgentPort {
  /**
   * A session of the machine's agent began (Hello) and is now its current one: refreshes its
   * last-seen time and reported info; if the machine had been marked disconnected, the
   * deployments with steps running on it are told it is back.
   */
  connected(machineId: string, sessionId: string, info: AgentInfo): Promise<void>;
  /**
   * That session ended. Unless a newer session already replaced it (on any replica), the machine
   * is offline from now, and every deployment with a step running on it says so at once and what
   * it waits for (the step fails if the agent is not back within the lost-agent timeout).
   */
  disconnected(machineId: string, sessionId: string): Promise<void>;
  /** The agent is alive (Heartbeat): refreshes its last-seen time. */
  heartbeat(machineId: string): Promise<void>;
  /**
   * The machine's dispatched tasks that are not finished: those to run, and those whose
   * deployment asked to cancel them (one read; on Hello and at every heartbeat, so a lost
   * wake-up or cancel event costs at most one heartbeat interval).
   */
  assignmentsFor(machineId: string): Promise<{ run: RunTaskPayload[]; cancel: string[] }>;
  /**
   * These tasks (just started, named by a tasks.dispatched event), where still running and not
   * being cancelled, with the machine each is for: one read for a whole window of machines.
   */
  dispatchedTasks(taskIds: readonly string[]): Promise<Array<{ machineId: string; payload: RunTaskPayload }>>;
  /**
   * Stores log lines of a task run by this machine; returns the highest seq now stored for the
   * task (for AckLogs). Lines of a task that is not the machine's are ignored.
   */
  recordLogs(machineId: string, taskId: string, lines: AgentLogLine[]): Promise<number>;
  /** Stores a task's outcome (once; a repeat is harmless) and wakes its deployment. Ack after it resolves. */
  recordResult(machineId: string, taskId: string, result: AgentTaskResult): Promise<void>;
}
