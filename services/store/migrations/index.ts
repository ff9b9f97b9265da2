/**
 * The ordered, append-only list of migrations. Never edit a shipped entry; add a new file.
 * Listed statically so the same code runs under tsx, vitest and a bundler.
 */
import type { Knex } from 'knex';
import * as createTopology from './202611221200_create_topology.ts';
import * as alterLifecycles from './202611221210_alter_lifecycles.ts';
import * as alterSteps from './202611221220_alter_steps.ts';
import * as alterMachines from './202611221230_alter_machines.ts';
import * as createPackages from './202611221250_create_packages.ts';
import * as createReleasesDeployments from './202611221300_create_releases_deployments.ts';
import * as createIdempotencyKeys from './202611231000_create_idempotency_keys.ts';
import * as alterMachinesSessions from './202611231010_alter_machines_sessions.ts';
import * as createDeploymentLogChunks from './202611231020_create_deployment_log_chunks.ts';
import * as dashboardSessions from './202611232000_dashboard_sessions.ts';
import * as createAuditEvents from './202611240100_create_audit_events.ts';
import * as machineHealth from './202611241000_machine_health.ts';
import * as enrollmentKeys from './202611241010_enrollment_keys.ts';
import * as deploymentAdvanceSeq from './202611241100_deployment_advance_seq.ts';
import * as agentUpgrades from './202611241110_agent_upgrades.ts';
import * as governance from './202611241120_governance.ts';
import * as runningTasksByMachine from './202611241130_running_tasks_by_machine.ts';
import * as phaseApprovals from './202611241140_phase_approvals.ts';
import * as releaseVersionOrder from './202611250900_release_version_order.ts';
import * as deploymentPlanJson from './202611270900_deployment_plan_json.ts';
import * as masterKeyCheck from './202612030900_master_key_check.ts';
import * as logRetention from './202612040900_log_retention.ts';

export interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export const migrations: ReadonlyArray<readonly [string, Migration]> = [
  ['202611221200_create_topology', createTopology],
  ['202611221210_alter_lifecycles', alterLifecycles],
  ['202611221220_alter_steps', alterSteps],
  ['202611221230_alter_machines', alterMachines],
  ['202611221250_create_packages', createPackages],
  ['202611221300_create_releases_deployments', createReleasesDeployments],
  ['202611231000_create_idempotency_keys', createIdempotencyKeys],
  ['202611231010_alter_machines_sessions', alterMachinesSessions],
  ['202611231020_create_deployment_log_chunks', createDeploymentLogChunks],
  ['202611232000_dashboard_sessions', dashboardSessions],
  ['202611240100_create_audit_events', createAuditEvents],
  ['202611241000_machine_health', machineHealth],
  ['202611241010_enrollment_keys', enrollmentKeys],
  ['202611241100_deployment_advance_seq', deploymentAdvanceSeq],
  ['202611241110_agent_upgrades', agentUpgrades],
  ['202611241120_governance', governance],
  ['202611241130_running_tasks_by_machine', runningTasksByMachine],
  ['202611241140_phase_approvals', phaseApprovals],
  ['202611250900_release_version_order', releaseVersionOrder],
  ['202611270900_deployment_plan_json', deploymentPlanJson],
  ['202612030900_master_key_check', masterKeyCheck],
  ['202612040900_log_retention', logRetention],
];
