import type { Clock, SecretBox } from '../core/index.ts';
import type { Store } from '../store/index.ts';

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
  wakeDeployments?: (deploymentIds: readonly string[]) => Promise<void>;
  /** Called after a release is committed: the engine starts its Automatic environments (contract §5). */
  onReleaseCreated?: (releaseId: string) => Promise<void>;
}
