/**
 * Live deployment changes across replicas, for followers of GET /api/deployment/events.
 *
 * - `notifyLogs(id)`: after a deployment's lines commit, publish one `deployment.logs` event,
 *   coalesced: while one publish of a deployment is in flight, further calls ask for exactly one
 *   more after it, so a busy deployment costs at most one bus message per publish round trip.
 * - `subscribe(id, fn)`: one bus subscription per replica (`deployments.>`: logs, status changes,
 *   dispatched windows) fans each event out to this replica's followers of that deployment.
 * - `subscribeAll(fn)`: every deployment's events (the API's read cache forgets what changed).
 *
 * Events are wake-ups only; followers re-read the store (and re-read on a timer when one is lost).
 */
import { toError, type Logger } from '../core/index.ts';
import { EventSubject, isMessageEnvelope, type Bus, type Subscription } from '../bus/index.ts';
import type { DeploymentChanges } from '../domain/index.ts';

export interface DeploymentChangeHub extends DeploymentChanges {
  notifyLogs(deploymentId: string): void;
  /** Calls `onChange` with the deployment's ID after each change of any deployment. */
  subscribeAll(onChange: (deploymentId: string) => void): () => void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createDeploymentChangeHub(bus: Bus, logger: Logger): DeploymentChangeHub {
  const followers = new Map<string, Set<() => void>>();
  const watchers = new Set<(deploymentId: string) => void>();
  /** Deployments with a publish in flight; true: another was asked for meanwhile. */
  const publishing = new Map<string, boolean>();
  let subscription: Subscription | null = null;

  const publish = (deploymentId: string): void => {
    publishing.set(deploymentId, false);
    bus
      .publishEvent(EventSubject.deploymentLogs(deploymentId), { v: 1, type: 'deployment.logs', deploymentId })
      .catch((error: unknown) => logger.warn({ err: toError(error), deploymentId }, 'log wake-up not published'))
      .finally(() => {
        if (publishing.get(deploymentId)) publish(deploymentId);
        else publishing.delete(deploymentId);
      });
  };

  return {
    notifyLogs(deploymentId) {
      if (publishing.has(deploymentId)) publishing.set(deploymentId, true);
      else publish(deploymentId);
    },
    subscribe(deploymentId, onChange) {
      let set = followers.get(deploymentId);
      if (!set) followers.set(deploymentId, (set = new Set()));
      set.add(onChange);
      return () => {
        set.delete(onChange);
        if (set.size === 0 && followers.get(deploymentId) === set) followers.delete(deploymentId);
      };
    },
    subscribeAll(onChange) {
      watchers.add(onChange);
      return () => void watchers.delete(onChange);
    },
    async start() {
      subscription = await bus.subscribeEvents(EventSubject.allDeploymentEvents, (message) => {
        if (!isMessageEnvelope(message) || !('deploymentId' in message)) return;
        for (const onChange of watchers) onChange(message.deploymentId);
        for (const onChange of followers.get(message.deploymentId) ?? []) onChange();
      });
    },
    async stop() {
      await subscription?.close();
      subscription = null;
    },
  };
}
