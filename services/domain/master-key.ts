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

/** What a master key rotation rewrote: how many sealed values of each kind. */
export interface RotationCounts {
  variableValues: number;
  feeds: number;
  cloudAccounts: number;
  releaseSnapshots: number;
}

export type RotationOutcome =
  | { outcome: 'rotated'; counts: RotationCounts }
  /** Control planes still run (each named): stop them all, then rotate. Nothing was changed. */
  | { outcome: 'replicas-running'; replicas: string[] }
  /** The current key is not the installation's, or opens not every value. Nothing was changed. */
  | { outcome: 'refused'; problem: string };

/** A sealed value the current key could not open (the key is wrong, or the value damaged). */
class UnopenableValue extends Error {}

/**
 * Reseals every value sealed with the installation's master key (`deps.secrets`, whose check is
 * `current.check`) with the next key, and records the next key's check: one transaction, so a
 * failure anywhere changes nothing. Runs only while no control plane does (the presence lock).
 */
export async function rotateMasterKey(
  deps: Pick<DomainDeps, 'store' | 'secrets' | 'clock'>,
  current: { check: string; source: string },
  next: { secrets: DomainDeps['secrets']; check: string },
  /** Who ran it, for the audit log (the operating system's user and host: no account signs it). */
  by: string,
): Promise<RotationOutcome> {
  if (next.check === current.check)
    return { outcome: 'refused', problem: `The new master key is the one ${current.source} holds already` };
  const reseal = (sealed: string, where: { table: string; id: string }) => {
    let plain: string;
    try {
      plain = deps.secrets.decrypt(sealed);
    } catch {
      throw new UnopenableValue(`${current.source} cannot open the value sealed in ${where.table} ${where.id}`);
    }
    return next.secrets.encrypt(plain);
  };
  try {
    return await deps.store.transaction(async (tx): Promise<RotationOutcome> => {
      const keys = tx.masterKeyCheck;
      if (!(await keys.lockOutReplicas()))
        return { outcome: 'replicas-running', replicas: await keys.replicasRunning() };
      const recorded = await keys.recordedForUpdate();
      // Not recorded yet (an installation from before the check): every value must open with it, below.
      if (recorded !== null && recorded !== current.check)
        return {
          outcome: 'refused',
          problem: `${current.source} is not the key this installation's Sensitive values are sealed with (its check starts ${current.check.slice(0, 12)}, the installation's ${recorded.slice(0, 12)})`,
        };
      const columns = await keys.resealColumns(reseal);
      const releaseSnapshots = await keys.resealSnapshots(reseal);
      await keys.replaceCheck(next.check);
      const counts: RotationCounts = {
        variableValues: columns.variable_values,
        feeds: columns.feeds,
        cloudAccounts: columns.cloud_accounts,
        releaseSnapshots,
      };
      // In the same transaction: the log says so exactly when it happened.
      await tx.auditEvents.insertForEveryOrganization({
        occurredUtc: deps.clock.now(),
        accountId: null,
        accountName: by,
        action: 'rotate-master-key',
        resourceType: 'master-key',
        after: counts,
        address: null,
        status: 200,
      });
      return { outcome: 'rotated', counts };
    });
  } catch (error) {
    if (error instanceof UnopenableValue)
      return { outcome: 'refused', problem: `${error.message}; nothing was changed` };
    throw error;
  }
}
