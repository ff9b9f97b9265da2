/** Project variables, workspace variables and project imports of workspace variables (contract §3). */
import type { Routes } from '../route-types.ts';
import { variableImportRoutes } from './imports.ts';
import { projectVariableRoutes } from './project.ts';
import { workspaceVariableRoutes } from './workspace.ts';

export const variableRoutes: Routes = async (app) => {
  await app.register(projectVariableRoutes);
  await app.register(workspaceVariableRoutes);
  await app.register(variableImportRoutes);
};
