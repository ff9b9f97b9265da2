/**
 * Messages carried by the bus. They are wake-ups, not records: PostgreSQL holds the truth, so a
 * message names what changed (ids) and a consumer re-reads the rows. Every message is versioned
 * (`v`) so replicas of different builds can share a bus during a rolling upgrade: add a new `v`
 * or `type` beside the old one rather than changing a shape in place.
 */

/** Work: "advance this deployment" (plan it, dispatch the next window, react to a result). */
export interface AdvanceDeploymentMessage {
  v: 1;
  type: 'deployment.advance';
  deploymentId: string;
  /**
   * A deployment just created names what its validation reads by, so that those reads leave with
   * the advance's claim. Optional and only a hint (checked against the claimed row): a build that
   * does not know it ignores it and reads after the claim.
   */
  validate?: { releaseId: string; workspaceId: string; environmentId: string };
}

/** Every message a work queue may carry. Extend this union; never change a shipped member. */
export type WorkMessage = AdvanceDeploymentMessage;

/** Event: cancel a task; reaches every replica, the one holding the agent's stream acts on it. */
export interface CancelTaskEvent {
  v: 1;
  type: 'task.cancel';
  taskId: string;
  deploymentId: string;
  machineId: string;
}

/** Event: a deployment's state changed; its live followers (GET /api/deployment/events, the dashboard) re-read it. */
export interface DeploymentChangedEvent {
  v: 1;
  type: 'deployment.changed';
  deploymentId: string;
  status: string;
}

/**
 * Event: log lines of a deployment were committed (coalesced: one per write at most); followers
 * of its live events (SSE) on every replica re-read the lines after their last tick.
 */
export interface DeploymentLogsEvent {
  v: 1;
  type: 'deployment.logs';
  deploymentId: string;
}

/**
 * Event: these tasks of one deployment were started. Each replica reads the ones whose agents it
 * holds in one query and sends them: fifty machines starting together cost one read, not fifty.
 */
export interface TasksDispatchedEvent {
  v: 1;
  type: 'tasks.dispatched';
  deploymentId: string;
  tasks: Array<{ taskId: string; machineId: string }>;
}

/**
 * Event: these machines' agents were asked to upgrade (POST /api/machine/upgrade); the replica
 * holding each one's session reads the request and sends UpgradeAgent (an agent not connected
 * anywhere gets it when it next says Hello).
 */
export interface AgentUpgradeEvent {
  v: 1;
  type: 'agents.upgrade';
  machineIds: string[];
}

/** Every message an event subject may carry. Extend this union; never change a shipped member. */
export type EventMessage =
  AgentUpgradeEvent | CancelTaskEvent | DeploymentChangedEvent | DeploymentLogsEvent | TasksDispatchedEvent;

/**
 * Checks the envelope of a message that crossed a process boundary. The body is trusted to match
 * its `type` (only our own replicas publish), but a payload that is not even `{ v, type }` is a
 * poison message and must not reach a handler's exhaustive switch.
 */
export function isMessageEnvelope(value: unknown): value is { v: number; type: string } {
  if (typeof value !== 'object' || value === null) return false;
  const { v, type } = value as { v?: unknown; type?: unknown };
  return typeof v === 'number' && typeof type === 'string';
}
