/**
 * Lifecycles, their ordered phases and each phase's environments (spec §2.4). Lifecycles are
 * deleted for real: a release freezes its lifecycle in its own snapshot.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export const ProgressRequirement = {
  AllMustComplete: 'AllMustComplete',
  MinimumNumberToComplete: 'MinimumNumberToComplete',
  OptionalPhase: 'OptionalPhase',
} as const;
export type ProgressRequirement = (typeof ProgressRequirement)[keyof typeof ProgressRequirement];

export const ProgressRequirementErrorMode = {
  NoErrorsNoWarnings: 'NoErrorsNoWarnings',
  NoErrorsAllowWarnings: 'NoErrorsAllowWarnings',
} as const;
export type ProgressRequirementErrorMode =
  (typeof ProgressRequirementErrorMode)[keyof typeof ProgressRequirementErrorMode];

export const HowToTrigger = { Automatic: 'Automatic', Manual: 'Manual' } as const;
export type HowToTrigger = (typeof HowToTrigger)[keyof typeof HowToTrigger];

export interface Lifecycle {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
}

export interface PhaseEnvironment {
  environmentId: string;
  environmentName: string;
  howToTrigger: HowToTrigger;
  /** Approvals this phase environment requires (issue #15); absent when it adds none. */
  requiredApprovals?: number;
}

export interface Phase {
  id: string;
  lifecycleId: string;
  name: string;
  description: string | null;
  sortOrder: number;
  progressRequirement: ProgressRequirement;
  progressRequirementErrorMode: ProgressRequirementErrorMode;
  progressRequirementCount: number;
  /** Live environments only, by environment sortOrder then name. */
  environments: PhaseEnvironment[];
}

export type PhaseFields = Omit<Phase, 'environments'>;

export interface LifecycleRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
}

export interface PhaseRow {
  id: string;
  lifecycle_id: string;
  name: string;
  description: string | null;
  sort_order: number;
  progress_requirement: string;
  progress_requirement_error_mode: string;
  progress_requirement_count: number;
}

export interface PhaseEnvironmentRow {
  phase_id: string;
  environment_id: string;
  environment_name: string;
  how_to_trigger: string;
  required_approvals: number | null;
}

export function toLifecycle(row: LifecycleRow): Lifecycle {
  return { id: row.id, workspaceId: row.workspace_id, name: row.name, description: row.description };
}

export function toPhase(row: PhaseRow, environments: PhaseEnvironment[]): Phase {
  return {
    id: row.id,
    lifecycleId: row.lifecycle_id,
    name: row.name,
    description: row.description,
    sortOrder: row.sort_order,
    progressRequirement: row.progress_requirement as ProgressRequirement,
    progressRequirementErrorMode: row.progress_requirement_error_mode as ProgressRequirementErrorMode,
    progressRequirementCount: row.progress_requirement_count,
    environments,
  };
}

export function toPhaseEnvironment(row: PhaseEnvironmentRow): PhaseEnvironment {
  return {
    environmentId: row.environment_id,
    environmentName: row.environment_name,
    howToTrigger: row.how_to_trigger as HowToTrigger,
    ...(row.required_approvals ? { requiredApprovals: row.required_approvals } : {}),
  };
}

function toPhaseRow(phase: PhaseFields): PhaseRow {
  return {
    id: phase.id,
    lifecycle_id: phase.lifecycleId,
    name: phase.name,
    description: phase.description,
    sort_order: phase.sortOrder,
    progress_requirement: phase.progressRequirement,
    progress_requirement_error_mode: phase.progressRequirementErrorMode,
    progress_requirement_count: phase.progressRequirementCount,
  };
}

export function lifecyclesStore(db: Db) {
  const phaseEnvironmentsOf = async (phaseIds: readonly string[]): Promise<Map<string, PhaseEnvironment[]>> => {
    const byPhase = new Map<string, PhaseEnvironment[]>();
    if (phaseIds.length === 0) return byPhase;
    // Soft-deleted environments drop out of the read model; their rows stay harmlessly behind.
    const rows: PhaseEnvironmentRow[] = await db('phase_environments as pe')
      .join('environments as e', 'e.id', 'pe.environment_id')
      .whereNull('e.deleted_at')
      .whereIn('pe.phase_id', phaseIds)
      .orderBy([{ column: 'e.sort_order' }, { column: 'e.name' }])
      .select(
        'pe.phase_id',
        'pe.environment_id',
        'e.name as environment_name',
        'pe.how_to_trigger',
        'pe.required_approvals',
      );
    for (const row of rows) {
      const list = byPhase.get(row.phase_id) ?? [];
      list.push(toPhaseEnvironment(row));
      byPhase.set(row.phase_id, list);
    }
    return byPhase;
  };

  return {
    async get(id: string): Promise<Lifecycle | null> {
      const row = await db<LifecycleRow>('lifecycles').where({ id }).first();
      return row ? toLifecycle(row) : null;
    },
    /** Locks the lifecycle row until the surrounding transaction ends, serializing phase edits. */
    async lock(id: string): Promise<void> {
      await db('lifecycles').where({ id }).forUpdate().first('id');
    },
    async list(workspaceId: string, page: Page): Promise<Paged<Lifecycle>> {
      return pageOf(
        db<LifecycleRow>('lifecycles').where({ workspace_id: workspaceId }),
        page,
        [{ column: 'name' }, { column: 'id' }],
        toLifecycle,
      );
    },
    /** The phases of the lifecycles, each list ordered by sortOrder. */
    async phasesOf(lifecycleIds: readonly string[]): Promise<Map<string, Phase[]>> {
      const byLifecycle = new Map<string, Phase[]>();
      if (lifecycleIds.length === 0) return byLifecycle;
      const rows: PhaseRow[] = await db('lifecycle_phases')
        .whereIn('lifecycle_id', lifecycleIds)
        .orderBy([{ column: 'sort_order' }, { column: 'id' }]);
      const environments = await phaseEnvironmentsOf(rows.map((r) => r.id));
      for (const row of rows) {
        const list = byLifecycle.get(row.lifecycle_id) ?? [];
        list.push(toPhase(row, environments.get(row.id) ?? []));
        byLifecycle.set(row.lifecycle_id, list);
      }
      return byLifecycle;
    },
    /** One phase with its environments, or null. */
    async getPhase(id: string): Promise<Phase | null> {
      const row = await db<PhaseRow>('lifecycle_phases').where({ id }).first();
      if (!row) return null;
      return toPhase(row, (await phaseEnvironmentsOf([row.id])).get(row.id) ?? []);
    },
    async insert(lifecycle: Lifecycle): Promise<void> {
      await db('lifecycles').insert({
        id: lifecycle.id,
        workspace_id: lifecycle.workspaceId,
        name: lifecycle.name,
        description: lifecycle.description,
      });
    },
    async update(id: string, patch: Partial<Pick<Lifecycle, 'name' | 'description'>>): Promise<void> {
      const row: Partial<LifecycleRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (Object.keys(row).length > 0) await db('lifecycles').where({ id }).update(row);
    },
    async insertPhase(phase: PhaseFields): Promise<void> {
      await db('lifecycle_phases').insert(toPhaseRow(phase));
    },
    /** Rewrites a phase's own fields (everything but its environments). */
    async updatePhase(phase: PhaseFields): Promise<void> {
      const { id, lifecycle_id: _lifecycleId, ...row } = toPhaseRow(phase);
      await db('lifecycle_phases').where({ id }).update(row);
    },
    async deletePhase(id: string): Promise<void> {
      await db('lifecycle_phases').where({ id }).delete();
    },
    /** Deletes every phase of a lifecycle (their environments cascade). */
    async deletePhases(lifecycleId: string): Promise<void> {
      await db('lifecycle_phases').where({ lifecycle_id: lifecycleId }).delete();
    },
    /** Sets sortOrder 1..n in the given order. */
    async renumberPhases(orderedPhaseIds: readonly string[]): Promise<void> {
      for (const [index, id] of orderedPhaseIds.entries()) {
        await db('lifecycle_phases')
          .where({ id })
          .whereNot({ sort_order: index + 1 })
          .update({ sort_order: index + 1 });
      }
    },
    /** Replaces the environments of a phase. */
    async setPhaseEnvironments(
      phaseId: string,
      environments: ReadonlyArray<Pick<PhaseEnvironment, 'environmentId' | 'howToTrigger' | 'requiredApprovals'>>,
    ): Promise<void> {
      await db('phase_environments').where({ phase_id: phaseId }).delete();
      if (environments.length === 0) return;
      await db('phase_environments').insert(
        environments.map((e) => ({
          phase_id: phaseId,
          environment_id: e.environmentId,
          how_to_trigger: e.howToTrigger,
          required_approvals: e.requiredApprovals ? e.requiredApprovals : null,
        })),
      );
    },
    /**
     * The approvals each environment requires through the phases of a lifecycle (issue #15):
     * environment ID → the highest requiredApprovals of its phase environments; absent when none.
     */
    async phaseApprovals(lifecycleId: string): Promise<Map<string, number>> {
      const rows: Array<{ environment_id: string; required: number }> = await db('phase_environments as pe')
        .join('lifecycle_phases as p', 'p.id', 'pe.phase_id')
        .where('p.lifecycle_id', lifecycleId)
        .whereNotNull('pe.required_approvals')
        .groupBy('pe.environment_id')
        .select('pe.environment_id', db.raw('max(pe.required_approvals)::int as required'));
      return new Map(rows.map((r) => [r.environment_id, r.required]));
    },
    /** Names of the live projects and the channels of live projects that use the lifecycle. */
    async usedBy(id: string): Promise<{ projects: string[]; channels: string[] }> {
      const projects = await db('projects')
        .where({ lifecycle_id: id })
        .whereNull('deleted_at')
        .orderBy('name')
        .select('name');
      const channels = await db('channels as c')
        .join('projects as p', 'p.id', 'c.project_id')
        .where('c.lifecycle_id', id)
        .whereNull('p.deleted_at')
        .orderBy([{ column: 'p.name' }, { column: 'c.name' }])
        .select('p.name as project_name', 'c.name');
      return {
        projects: projects.map((r) => r.name as string),
        channels: channels.map((r) => `${r.project_name as string}/${r.name as string}`),
      };
    },
    /**
     * Deletes a lifecycle and its phases. Deleted projects (and their channels) no longer count
     * as users, so their references are cleared first: they would otherwise block it forever.
     */
    async delete(id: string): Promise<void> {
      const deletedProjects = db('projects').whereNotNull('deleted_at').select('id');
      await db('channels')
        .where({ lifecycle_id: id })
        .whereIn('project_id', deletedProjects)
        .update({ lifecycle_id: null });
      await db('projects').where({ lifecycle_id: id }).whereNotNull('deleted_at').update({ lifecycle_id: null });
      await db('lifecycles').where({ id }).delete();
    },
  };
}
