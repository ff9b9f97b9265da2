/**
 * A deployment row as a manual deploy of all the environment's machines stores it, for tests and
 * benches that insert one directly (store.deployments.insert) rather than through the API. No
 * test runner in it: bench/fleet/record-statement.ts uses it too.
 */
import type { NewDeployment } from '../../services/store/index.ts';

export function manualDeployment(
  row: Pick<NewDeployment, 'id' | 'workspaceId' | 'projectId' | 'releaseId' | 'environmentId' | 'environmentName'> &
    Partial<Pick<NewDeployment, 'excludeStepNames' | 'scheduledFor'>>,
): NewDeployment {
  return {
    automatic: false,
    excludeStepNames: [],
    machineMode: 'All',
    machineIds: [],
    redownloadPackages: false,
    scheduledFor: null,
    ...row,
  };
}
