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
  /**
   * What stands for `#{CONTEXT.PackageFolder}` in the script and env values, for the agent to
   * replace with the folder it unpacks the first package to; '' when the task has no package.
   */
  packageFolderToken: string;
}

/**
 * Consecutive lines of one task as its agent sent them (seq firstSeq .. firstSeq + lineCount - 1),
 * checked by the gateway: lineCount lines of at most 32,768 characters in `text`.
 */
export interface AgentLogChunk {
  firstSeq: number;
  lineCount: number;
  /** When the agent read the first line (Unix epoch nanoseconds, as a decimal string: exceeds 2^53). */
  firstUnixNanos: string;
  /** Every line followed by '\n'. */
  text: string;
  /** One LogLine.Stream value of agent.proto per line (1 STDOUT, 2 STDERR, 3 SYSTEM); null: all STDOUT. */
  streams: Uint8Array | null;
  /** Nanoseconds from each line to the next (lineCount - 1 values); null: all read at once. */
  timeDeltasNs: number[] | null;
}

/** What became of an agent's task result. */
export type ResultReceipt =
  /** Stored, or known already (a re-sent result, or one for a step that had ended): acknowledge it. */
  | 'recorded'
  /** Lines it covers are not all stored yet: keep it and offer it again once they are. */
  | 'waiting-for-lines';

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
  /** Which of bash, sh, python3, pwsh the agent found on its PATH (absent: an older agent). */
  interpreters?: string[];
  /** Bytes free in the agent's home (absent: not reported). */
  homeFreeBytes?: number;
}

/** What a Heartbeat may carry beyond "alive". */
export interface AgentHeartbeat {
  homeFreeBytes?: number;
}

/** What an agent said about an UpgradeAgent it was sent. */
export interface AgentUpgradeReport {
  version: string;
  state: 'STARTED' | 'FAILED';
  message: string;
}

export interface AgentPort {
  /**
   * The agent version this machine's agent was asked to upgrade to and has not started upgrading
   * to yet (POST /api/machine/upgrade), or null. The gateway sends UpgradeAgent for it when it
   * ships that version.
   */
  pendingUpgrade(machineId: string): Promise<string | null>;
  /** Records the agent's report on its upgrade (a failure leaves the old agent running: said in its health). */
  upgradeReported(machineId: string, report: AgentUpgradeReport): Promise<void>;
  /**
   * A session of the machine's agent began (Hello) and is now its current one: refreshes its
   * last-seen time and reported info; if the machine had been marked disconnected, the
   * deployments with steps running on it are told it is back. Answers what pendingUpgrade would,
   * read with the same write: 10,000 agents reconnecting after a replica restart each say Hello.
   */
  connected(machineId: string, sessionId: string, info: AgentInfo): Promise<{ pendingUpgrade: string | null }>;
  /**
   * That session ended. Unless a newer session already replaced it (on any replica), the machine
   * is offline from now, and every deployment with a step running on it says so at once and what
   * it waits for (the step fails if the agent is not back within the lost-agent timeout).
   */
  disconnected(machineId: string, sessionId: string): Promise<void>;
  /** The agent is alive (any message): refreshes its last-seen time, and what a Heartbeat reported. */
  heartbeat(machineId: string, report?: AgentHeartbeat): Promise<void>;
  /**
   * The machine's running tasks and whether each one's deployment is being cancelled: cheap
   * (batched with other agents' heartbeats), so a Heartbeat asks this, and reads assignments
   * only when the session has not sent something here or still remembers a finished task.
   */
  runningTasksOf(machineId: string): Promise<Array<{ taskId: string; cancelling: boolean }>>;
  /**
   * The machine's dispatched tasks that are not finished: those to run, and those whose
   * deployment asked to cancel them (one read; on Hello, and at a heartbeat when runningTasksOf
   * shows something the session has not sent, so a lost wake-up or cancel event costs at most
   * one heartbeat interval).
   */
  assignmentsFor(machineId: string): Promise<{ run: RunTaskPayload[]; cancel: string[] }>;
  /**
   * These tasks (just started, named by a tasks.dispatched event), where still running and not
   * being cancelled, with the machine each is for: one read for a whole window of machines.
   */
  dispatchedTasks(taskIds: readonly string[]): Promise<Array<{ machineId: string; payload: RunTaskPayload }>>;
  /**
   * Whether this machine may download this package version now: only while a task dispatched to
   * it and not finished references that exact version (its RunTask lists it). A machine's
   * credential never reaches another machine's packages, nor one no step of its tasks uses.
   */
  mayDownload(machineId: string, packageId: string, version: string): Promise<boolean>;
  /**
   * Stores chunks of a task run by this machine — a contiguous run of its lines, in one write;
   * returns the seq up to which the agent may forget its lines (for AckLogs): stored now or
   * before, or past a step that already ended. Lines of a task that is not the machine's are
   * ignored (0).
   */
  recordLogs(machineId: string, taskId: string, chunks: readonly AgentLogChunk[]): Promise<number>;
  /**
   * Stores a task's outcome once every line it covers is stored (a repeat is harmless) and wakes
   * its deployment. `force`: apply it although lines are missing (they never came; said in the log).
   */
  recordResult(
    machineId: string,
    taskId: string,
    result: AgentTaskResult,
    options?: { force?: boolean },
  ): Promise<ResultReceipt>;
}
