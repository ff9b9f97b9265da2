import type { Db } from './db.ts';

export interface Organization {
  id: string;
  name: string;
  maxParallelMachines: number;
  maxConcurrentDeployments: number;
  maxQueuedDeployments: number;
}

interface OrganizationRow {
  id: string;
  name: string;
  max_parallel_machines: number;
  max_concurrent_deployments: number;
  max_queued_deployments: number;
}

function toOrganization(row: OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    maxParallelMachines: row.max_parallel_machines,
    maxConcurrentDeployments: row.max_concurrent_deployments,
    maxQueuedDeployments: row.max_queued_deployments,
  };
}

export function organizationsStore(db: Db) {
  return {
    async get(id: string): Promise<Organization | null> {
      const row = await db<OrganizationRow>('organizations').where({ id }).first();
      return row ? toOrganization(row) : null;
    },
    async updateSettings(
      id: string,
      patch: Partial<Pick<Organization, 'maxParallelMachines' | 'maxConcurrentDeployments' | 'maxQueuedDeployments'>>,
    ): Promise<void> {
      const row: Partial<OrganizationRow> = {};
      if (patch.maxParallelMachines !== undefined) row.max_parallel_machines = patch.maxParallelMachines;
      if (patch.maxConcurrentDeployments !== undefined) row.max_concurrent_deployments = patch.maxConcurrentDeployments;
      if (patch.maxQueuedDeployments !== undefined) row.max_queued_deployments = patch.maxQueuedDeployments;
      if (Object.keys(row).length > 0) await db('organizations').where({ id }).update(row);
    },
  };
}
