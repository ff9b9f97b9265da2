/**
 * Subject and queue names. Callers of the `Bus` pass names relative to the bus prefix (a queue
 * name, or an event subject such as `deployments.<id>.changed`); adapters place them under
 * `<prefix>.work.<queue>` and `<prefix>.events.<subject>`. The default prefix is `gantry`.
 */

export const DEFAULT_BUS_PREFIX = 'gantry';

/** Work queues: one durable consumer group per queue across all replicas. */
export const WorkQueue = {
  /** Orchestrator wake-ups: AdvanceDeploymentMessage. */
  deployments: 'deployments',
} as const;
export type WorkQueue = (typeof WorkQueue)[keyof typeof WorkQueue];

/** Event subjects and the patterns that match them (NATS syntax: `*` one token, trailing `>` the rest). */
export const EventSubject = {
  taskCancel: (taskId: string) => `tasks.${token(taskId)}.cancel`,
  allTaskCancels: 'tasks.*.cancel',
  deploymentChanged: (deploymentId: string) => `deployments.${token(deploymentId)}.changed`,
  allDeploymentEvents: 'deployments.>',
  deploymentLogs: (deploymentId: string) => `deployments.${token(deploymentId)}.logs`,
  tasksDispatched: (deploymentId: string) => `deployments.${token(deploymentId)}.tasks-dispatched`,
  allTasksDispatched: 'deployments.*.tasks-dispatched',
  agentUpgrades: 'agents.upgrade',
} as const;

// A prefix or queue becomes a NATS stream/consumer name, so it is restricted to name-safe chars.
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
// One subject token: anything NATS accepts except separators and wildcards.
const TOKEN = /^[^.*>\s]+$/;
// A subject or pattern: tokens separated by dots, `*` tokens, and an optional trailing `>`.
const PATTERN = /^(?:(?:[^.*>\s]+|\*)\.)*(?:[^.*>\s]+|\*|>)$/;

function token(value: string): string {
  if (!TOKEN.test(value)) throw new Error(`Invalid bus subject token '${value}'`);
  return value;
}

export function assertBusName(kind: 'prefix' | 'queue', value: string): void {
  if (!NAME.test(value)) throw new Error(`Invalid bus ${kind} '${value}': use 1-64 of A-Z a-z 0-9 _ -`);
}

export function assertEventSubject(subject: string, { allowWildcards }: { allowWildcards: boolean }): void {
  if (!PATTERN.test(subject) || (!allowWildcards && /(^|\.)[*>]($|\.)/.test(subject))) {
    throw new Error(`Invalid bus event subject '${subject}'`);
  }
}

export const workSubject = (prefix: string, queue: string): string => `${prefix}.work.${queue}`;
export const eventSubject = (prefix: string, subject: string): string => `${prefix}.events.${subject}`;

/** In-memory equivalent of NATS subject matching, for the in-process bus. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
