/** Every resource's routes, registered once. A resource's folder holds its routes and schemas. */
import type { Routes } from './route-types.ts';
import { accountRoutes } from './accounts/index.ts';
import { workspaceRoutes } from './workspaces/index.ts';
import { environmentRoutes } from './environments/index.ts';
import { projectRoutes } from './projects/index.ts';
import { tagRoutes } from './tags/index.ts';
import { machineRoutes } from './machines/index.ts';
import { agentRoutes } from './agent-install/index.ts';
import { lifecycleRoutes } from './lifecycles/index.ts';
import { channelRoutes } from './channels/index.ts';
import { stepTemplateRoutes } from './step-templates/index.ts';
import { projectStepRoutes } from './project-steps/index.ts';
import { rollingGroupRoutes } from './rolling-groups/index.ts';
import { variableRoutes } from './variables/index.ts';
import { scriptModuleRoutes } from './script-modules/index.ts';
import { feedRoutes } from './feeds/index.ts';
import { cloudAccountRoutes } from './cloud-accounts/index.ts';
import { deploymentRoutes } from './deployments/index.ts';
import { deploymentEventRoutes } from './deployments/events.ts';
import { deploymentLogDownloadRoutes } from './deployments/log-download.ts';
import { packageRoutes } from './packages/index.ts';
import { releaseRoutes } from './releases/index.ts';
import { sessionRoutes } from './sessions/index.ts';
import { dashboardRoutes } from './dashboard/index.ts';
import { dashboardChangeRoutes } from './dashboard/changes.ts';
import { healthRoutes } from './health/index.ts';
import { auditRoutes } from './audit/index.ts';
import { governanceRoutes } from './governance/index.ts';

const all: Routes[] = [
  accountRoutes,
  workspaceRoutes,
  environmentRoutes,
  projectRoutes,
  tagRoutes,
  machineRoutes,
  agentRoutes,
  lifecycleRoutes,
  channelRoutes,
  stepTemplateRoutes,
  projectStepRoutes,
  rollingGroupRoutes,
  variableRoutes,
  scriptModuleRoutes,
  feedRoutes,
  cloudAccountRoutes,
  deploymentRoutes,
  deploymentEventRoutes,
  deploymentLogDownloadRoutes,
  packageRoutes,
  releaseRoutes,
  sessionRoutes,
  dashboardRoutes,
  dashboardChangeRoutes,
  healthRoutes,
  auditRoutes,
  governanceRoutes,
];

export const registerRoutes: Routes = async (app) => {
  for (const routes of all) await app.register(routes);
};
