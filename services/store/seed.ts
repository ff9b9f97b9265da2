/**
 * First-start seed (contract §2): organization "Default", workspace "Main" with Staging and
 * Production, and "Default Lifecycle" (Staging → Production). Runs under a transaction-scoped
 * advisory lock, so replicas starting together on an empty database seed exactly once.
 */
import type { Db } from './db.ts';
import { newId } from '../core/index.ts';

const SEED_LOCK_KEY = 727_002;

export interface SeedResult {
  organizationId: string;
  /** True when this call created the installation (the database was empty). */
  created: boolean;
}

export async function seedInstallation(db: Db): Promise<SeedResult> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [SEED_LOCK_KEY]);
    const existing = await trx('organizations').orderBy('created_at').first('id');
    if (existing) return { organizationId: existing.id as string, created: false };

    const organizationId = newId();
    const workspaceId = newId();
    const staging = newId();
    const production = newId();
    const lifecycleId = newId();
    await trx('organizations').insert({ id: organizationId, name: 'Default' });
    await trx('workspaces').insert({ id: workspaceId, organization_id: organizationId, name: 'Main' });
    await trx('environments').insert([
      { id: staging, workspace_id: workspaceId, name: 'Staging', sort_order: 1 },
      { id: production, workspace_id: workspaceId, name: 'Production', sort_order: 2 },
    ]);
    await trx('lifecycles').insert({ id: lifecycleId, workspace_id: workspaceId, name: 'Default Lifecycle' });
    const phases = [
      { id: newId(), name: 'Staging', sort_order: 1, environment_id: staging },
      { id: newId(), name: 'Production', sort_order: 2, environment_id: production },
    ];
    for (const phase of phases) {
      await trx('lifecycle_phases').insert({
        id: phase.id,
        lifecycle_id: lifecycleId,
        name: phase.name,
        sort_order: phase.sort_order,
      });
      await trx('phase_environments').insert({
        phase_id: phase.id,
        environment_id: phase.environment_id,
        how_to_trigger: 'Manual',
      });
    }
    return { organizationId, created: true };
  });
}
