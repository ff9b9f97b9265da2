/**
 * A replica must start with the master key its installation's Sensitive values are sealed with.
 * With another one (a replica given a different GANTRY_MASTER_KEY, a data folder restored without
 * its master.key, which the next start then makes anew) nothing fails at start, but every
 * Sensitive value, feed and cloud-account credential fails to open at deploy time, and what it
 * seals from then on the other replicas cannot open: the installation's secrets split in two. So
 * the first start records a check of its key, and every start compares.
 */
import type { DomainDeps } from './deps.ts';

/** Why this key must not be used here, or null when it is the installation's. */
export async function masterKeyProblem(
  deps: Pick<DomainDeps, 'store' | 'secrets'>,
  key: { check: string; source: string },
): Promise<string | null> {
  const { masterKeyCheck } = deps.store;
  let recorded = await masterKeyCheck.recorded();
  if (recorded === null) {
    // An installation from before the check was kept: the key must open what is sealed already.
    const sealed = await masterKeyCheck.oneSealedValue();
    if (sealed !== null && !opens(deps, sealed))
      return `${key.source} is not the key this installation's Sensitive values are sealed with (it cannot open them). Start with the installation's key (a backup of the database goes with its key); every replica shares one`;
    recorded = await masterKeyCheck.record(key.check);
  }
  if (recorded === key.check) return null;
  return (
    `${key.source} is not the key this installation's Sensitive values are sealed with ` +
    `(its check starts ${key.check.slice(0, 12)}, the installation's ${recorded.slice(0, 12)}). ` +
    `Start with the installation's key (a backup of the database goes with its key); every replica shares one. ` +
    `With another key its Sensitive values and credentials could not be read, and what it sealed the other replicas could not open`
  );
}

function opens(deps: Pick<DomainDeps, 'secrets'>, sealed: string): boolean {
  try {
    deps.secrets.decrypt(sealed);
    return true;
  } catch {
    return false;
  }
}
