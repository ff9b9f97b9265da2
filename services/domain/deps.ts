import type { Clock, SecretBox } from '../core/index.ts';
import type { Store } from '../store/index.ts';

/** What every use case receives. Passed in, never imported as a singleton. */
export interface DomainDeps {
  store: Store;
  clock: Clock;
  secrets: SecretBox;
}
