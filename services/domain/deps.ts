import type { Clock, SecretBox } from '../core/index.ts';
import type { Release, Store } from '../store/index.ts';
import type { MachineHealthLimits } from './machine-health.ts';
import type { ReadCaches } from './read-caches.ts';

/**
 * Tells a follower of a deployment (the SSE stream) that it changed somewhere: log lines or
 * status committed on any replica. A wake-up only: the follower re-reads the store.
 */
export interface DeploymentChanges {
  /** Calls `onChange` after each change of the deployment until the returned function is called. */
  subscribe(deploymentId: string, onChange: () => void): () => void;
}

/** A deployment just created, woken with what its validation reads by (the engine reads them with its claim). */
export interface CreatedDeployment {
  deploymentId: string;
  releaseId: string;
  workspaceId: string;
  environmentId: string;
}

/** What every use case receives. Passed in, never imported as a singleton. */
export interface DomainDeps {
  store: Store;
  clock: Clock;
  secrets: SecretBox;
  /**
   * Asks the deployment engine to act on these deployments now (created, cancelled). The engine
   * implements it; without one (tests of the topology alone) deployments simply wait. Never
   * throws (best effort: the engine's sweep starts what a lost wake-up did not).
   */
  wakeDeployments?: (deployments: ReadonlyArray<string | CreatedDeployment>) => Promise<void>;
  /**
   * Called after a release is committed, with the release as stored (so it need not be read
   * back): the engine starts its Automatic environments (contract §5).
   */
  onReleaseCreated?: (release: Release) => Promise<void>;
  /** Wakes deployment followers at once; without it they re-read on their slow timer only. */
  deploymentChanges?: DeploymentChanges;
  /**
   * Wakes the replicas holding these machines' agents to send them their pending upgrade (the
   * request itself is in the store; an agent not reached now gets it at its next Hello). Best effort.
   */
  upgradeAgents?: (machineIds: readonly string[]) => Promise<void>;
  /** This replica's caches of hot reads (principals, finished deployments); none: every read goes to the store. */
  readCaches?: ReadCaches;
  /**
   * Forgets this replica's cached reads: called after deleting an account, an API key or a
   * workspace. Under the API it runs once the request's transaction committed.
   */
  forgetCachedReads?: () => Promise<void>;
  /** When an online machine reads Unhealthy (default DEFAULT_MACHINE_HEALTH_LIMITS). */
  machineHealth?: MachineHealthLimits;
}
