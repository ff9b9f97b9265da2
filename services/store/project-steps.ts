/**
 * Project steps (spec §4.11, contract §3): the ordered deployment process of a project. Steps are
 * hard-deleted; `sort_order` is kept 1..n without gaps by the domain.
 */
import type { Db } from './db.ts';

export interface TagSet {
  tagIds: string[];
}

export interface ProjectStep {
  id: string;
  projectId: string;
  /** The owning project's workspace (read through the project; not a column of the step). */
  workspaceId: string;
  name: string;
  description: string | null;
  stepTemplateId: string;
  sortOrder: number;
  runMode: string | null;
  errorAction: string;
  disabled: boolean;
  parallelMachines: number | null;
  environmentIds: string[];
  machineIdFilter: string[];
  machineTagFilter: TagSet[];
  propertiesJson: string;
  rollingGroupId: string | null;
}

export interface ProjectStepRow {
  id: string;
  project_id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  step_template_id: string;
  sort_order: number;
  run_mode: string | null;
  error_action: string;
  disabled: boolean;
  parallel_machines: number | null;
  environment_ids: string[];
  machine_id_filter: string[];
  machine_tag_filter: TagSet[];
  properties_json: string;
  rolling_group_id: string | null;
}

export function toProjectStep(row: ProjectStepRow): ProjectStep {
  return {
    id: row.id,
    projectId: row.project_id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    stepTemplateId: row.step_template_id,
    sortOrder: row.sort_order,
    runMode: row.run_mode,
    errorAction: row.error_action,
    disabled: row.disabled,
    parallelMachines: row.parallel_machines,
    environmentIds: row.environment_ids,
    machineIdFilter: row.machine_id_filter,
    machineTagFilter: row.machine_tag_filter,
    propertiesJson: row.properties_json,
    rollingGroupId: row.rolling_group_id,
  };
}

export type ProjectStepPatch = Partial<
  Omit<ProjectStep, 'id' | 'projectId' | 'workspaceId' | 'stepTemplateId' | 'sortOrder' | 'rollingGroupId'>
>;

function toRow(patch: ProjectStepPatch): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  if (patch.name !== undefined) row.name = patch.name;
  if (patch.description !== undefined) row.description = patch.description;
  if (patch.runMode !== undefined) row.run_mode = patch.runMode;
  if (patch.errorAction !== undefined) row.error_action = patch.errorAction;
  if (patch.disabled !== undefined) row.disabled = patch.disabled;
  if (patch.parallelMachines !== undefined) row.parallel_machines = patch.parallelMachines;
  // jsonb columns: arrays must be serialized, or pg would send them as PostgreSQL arrays.
  if (patch.environmentIds !== undefined) row.environment_ids = JSON.stringify(patch.environmentIds);
  if (patch.machineIdFilter !== undefined) row.machine_id_filter = JSON.stringify(patch.machineIdFilter);
  if (patch.machineTagFilter !== undefined) row.machine_tag_filter = JSON.stringify(patch.machineTagFilter);
  if (patch.propertiesJson !== undefined) row.properties_json = patch.propertiesJson;
  return row;
}

export function projectStepsStore(db: Db) {
  // Steps of deleted projects are invisible: a deleted project is treated as not existing.
  const live = () =>
    db('project_steps as s')
      .join('projects as p', 'p.id', 's.project_id')
      .whereNull('p.deleted_at')
      .select<ProjectStepRow[]>('s.*', 'p.workspace_id');
  return {
    async get(id: string): Promise<ProjectStep | null> {
      const row = await live().where('s.id', id).first();
      return row ? toProjectStep(row) : null;
    },
    /** The project's steps in deployment order. */
    async listByProject(projectId: string): Promise<ProjectStep[]> {
      return (
        await live()
          .where('s.project_id', projectId)
          .orderBy([{ column: 's.sort_order' }, { column: 's.id' }])
      ).map(toProjectStep);
    },
    /** Steps of live projects built from a template. */
    async listByTemplate(stepTemplateId: string): Promise<ProjectStep[]> {
      return (
        await live()
          .where('s.step_template_id', stepTemplateId)
          .orderBy([{ column: 's.project_id' }, { column: 's.sort_order' }])
      ).map(toProjectStep);
    },
    /**
     * Serializes changes to one project's step list (append, delete, reorder, group membership)
     * until the surrounding transaction ends, so two writers never compute positions from the
     * same stale list. False when the project is missing or deleted. NO KEY UPDATE, as every
     * project lock: inserts that reference the project (deployments) are not held back.
     */
    async lockProject(projectId: string): Promise<boolean> {
      const row = await db('projects').where({ id: projectId }).whereNull('deleted_at').forNoKeyUpdate().first('id');
      return row !== undefined;
    },
    async maxSortOrder(projectId: string): Promise<number> {
      const [row] = await db('project_steps').where({ project_id: projectId }).max({ m: 'sort_order' });
      return Number(row?.m ?? 0);
    },
    async insert(step: Omit<ProjectStep, 'workspaceId'>): Promise<void> {
      await db('project_steps').insert({
        id: step.id,
        project_id: step.projectId,
        step_template_id: step.stepTemplateId,
        sort_order: step.sortOrder,
        rolling_group_id: step.rollingGroupId,
        ...toRow(step),
      });
    },
    async update(id: string, patch: ProjectStepPatch): Promise<void> {
      const row = toRow(patch);
      if (Object.keys(row).length > 0) await db('project_steps').where({ id }).update(row);
    },
    async delete(id: string): Promise<void> {
      await db('project_steps').where({ id }).delete();
    },
    /** Rewrites the project's positions to 1..n in the given order (one statement). */
    async setOrder(projectId: string, orderedIds: readonly string[]): Promise<void> {
      if (orderedIds.length === 0) return;
      await db.raw(
        `update project_steps s set sort_order = v.ord
           from unnest(?::text[]) with ordinality as v(id, ord)
          where s.id = v.id and s.project_id = ?`,
        [[...orderedIds], projectId],
      );
    },
    async setRollingGroup(stepIds: readonly string[], rollingGroupId: string | null): Promise<void> {
      if (stepIds.length === 0) return;
      await db('project_steps').whereIn('id', stepIds).update({ rolling_group_id: rollingGroupId });
    },
    /** How many of `ids` are machines of the workspace (the step's machine filter must name only those). */
    async countMachines(workspaceId: string, ids: readonly string[]): Promise<number> {
      if (ids.length === 0) return 0;
      const [row] = await db('machines')
        .where({ workspace_id: workspaceId })
        .whereIn('id', [...new Set(ids)])
        .count({ n: '*' });
      return Number(row?.n ?? 0);
    },
  };
}
