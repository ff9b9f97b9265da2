/**
 * Rolling groups (spec §2.5): the group's own settings. Membership lives on the steps
 * (`project_steps.rolling_group_id`); `order` and `memberStepIds` are derived from them.
 */
import type { Db } from './db.ts';

export interface RollingGroupSettings {
  name: string;
  windowSize: number;
  machineOrder: string;
  machineOrderTagIds: string[];
  waitBetweenMachineGroups: boolean;
  onMachineFailure: string;
  onMemberFailure: string;
  onNoTargets: string;
}

export interface RollingGroupRecord extends RollingGroupSettings {
  id: string;
  projectId: string;
  /** The owning project's workspace (read through the project). */
  workspaceId: string;
}

export interface RollingGroupRow {
  id: string;
  project_id: string;
  workspace_id: string;
  name: string;
  window_size: number;
  machine_order: string;
  machine_order_tag_ids: string[];
  wait_between_machine_groups: boolean;
  on_machine_failure: string;
  on_member_failure: string;
  on_no_targets: string;
}

export function toRollingGroup(row: RollingGroupRow): RollingGroupRecord {
  return {
    id: row.id,
    projectId: row.project_id,
    workspaceId: row.workspace_id,
    name: row.name,
    windowSize: row.window_size,
    machineOrder: row.machine_order,
    machineOrderTagIds: row.machine_order_tag_ids,
    waitBetweenMachineGroups: row.wait_between_machine_groups,
    onMachineFailure: row.on_machine_failure,
    onMemberFailure: row.on_member_failure,
    onNoTargets: row.on_no_targets,
  };
}

function toRow(patch: Partial<RollingGroupSettings>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  if (patch.name !== undefined) row.name = patch.name;
  if (patch.windowSize !== undefined) row.window_size = patch.windowSize;
  if (patch.machineOrder !== undefined) row.machine_order = patch.machineOrder;
  if (patch.machineOrderTagIds !== undefined) row.machine_order_tag_ids = JSON.stringify(patch.machineOrderTagIds);
  if (patch.waitBetweenMachineGroups !== undefined) row.wait_between_machine_groups = patch.waitBetweenMachineGroups;
  if (patch.onMachineFailure !== undefined) row.on_machine_failure = patch.onMachineFailure;
  if (patch.onMemberFailure !== undefined) row.on_member_failure = patch.onMemberFailure;
  if (patch.onNoTargets !== undefined) row.on_no_targets = patch.onNoTargets;
  return row;
}

export function rollingGroupsStore(db: Db) {
  const live = () =>
    db('rolling_groups as g')
      .join('projects as p', 'p.id', 'g.project_id')
      .whereNull('p.deleted_at')
      .select<RollingGroupRow[]>('g.*', 'p.workspace_id');
  return {
    /** A group of a live project, or null. */
    async get(id: string): Promise<RollingGroupRecord | null> {
      const row = await live().where('g.id', id).first();
      return row ? toRollingGroup(row) : null;
    },
    async listByProject(projectId: string): Promise<RollingGroupRecord[]> {
      return (await live().where('g.project_id', projectId).orderBy('g.id')).map(toRollingGroup);
    },
    async insert(group: Omit<RollingGroupRecord, 'workspaceId'>): Promise<void> {
      await db('rolling_groups').insert({ id: group.id, project_id: group.projectId, ...toRow(group) });
    },
    async update(id: string, patch: Partial<RollingGroupSettings>): Promise<void> {
      const row = toRow(patch);
      if (Object.keys(row).length > 0) await db('rolling_groups').where({ id }).update(row);
    },
    /** Releases the group's steps, then removes the group. */
    async delete(id: string): Promise<void> {
      await db('project_steps').where({ rolling_group_id: id }).update({ rolling_group_id: null });
      await db('rolling_groups').where({ id }).delete();
    },
  };
}
