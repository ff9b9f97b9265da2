/** Step templates (contract §3): reusable scripts with property definitions; soft-deleted. */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface StepTemplate {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  script: string;
  scriptLanguage: string;
  supportedRunModes: string[];
  /** The property definitions exactly as the caller sent them (a JSON string). */
  propertiesRaw: string;
}

export interface StepTemplateRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  script: string;
  script_language: string;
  supported_run_modes: string[];
  properties_raw: string;
  deleted_at: Date | null;
}

export function toStepTemplate(row: StepTemplateRow): StepTemplate {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    script: row.script,
    scriptLanguage: row.script_language,
    supportedRunModes: row.supported_run_modes,
    propertiesRaw: row.properties_raw,
  };
}

/** A step that uses a template, named for the refusal message when deleting the template. */
export interface StepTemplateUsage {
  projectName: string;
  stepName: string;
}

export function stepTemplatesStore(db: Db) {
  const live = () => db<StepTemplateRow>('step_templates').whereNull('deleted_at');
  return {
    /**
     * A non-deleted step template, or null. Inside a transaction, `lock` 'share' keeps it from being
     * deleted until commit (a step is being added), 'update' waits for such steps (it is being deleted).
     */
    async get(id: string, lock?: 'share' | 'update'): Promise<StepTemplate | null> {
      const query = live().where({ id });
      if (lock === 'share') query.forShare();
      if (lock === 'update') query.forUpdate();
      const row = await query.first();
      return row ? toStepTemplate(row) : null;
    },
    async findByName(workspaceId: string, name: string): Promise<StepTemplate | null> {
      const row = await live().where({ workspace_id: workspaceId }).whereRaw('lower(name) = lower(?)', [name]).first();
      return row ? toStepTemplate(row) : null;
    },
    async list(workspaceId: string, page: Page): Promise<Paged<StepTemplate>> {
      return pageOf(
        live().where({ workspace_id: workspaceId }),
        page,
        [{ column: 'name' }, { column: 'id' }],
        toStepTemplate,
      );
    },
    async insert(template: StepTemplate): Promise<void> {
      await db('step_templates').insert({
        id: template.id,
        workspace_id: template.workspaceId,
        name: template.name,
        description: template.description,
        script: template.script,
        script_language: template.scriptLanguage,
        supported_run_modes: JSON.stringify(template.supportedRunModes),
        properties_raw: template.propertiesRaw,
      });
    },
    async update(id: string, patch: Partial<Omit<StepTemplate, 'id' | 'workspaceId'>>): Promise<void> {
      const row: Record<string, unknown> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.script !== undefined) row.script = patch.script;
      if (patch.scriptLanguage !== undefined) row.script_language = patch.scriptLanguage;
      if (patch.supportedRunModes !== undefined) row.supported_run_modes = JSON.stringify(patch.supportedRunModes);
      if (patch.propertiesRaw !== undefined) row.properties_raw = patch.propertiesRaw;
      if (Object.keys(row).length > 0) await live().where({ id }).update(row);
    },
    /** Steps of live projects that use the template (steps of deleted projects never deploy again). */
    async usedBy(id: string): Promise<StepTemplateUsage[]> {
      const rows: Array<{ project_name: string; step_name: string }> = await db('project_steps as s')
        .join('projects as p', 'p.id', 's.project_id')
        .whereNull('p.deleted_at')
        .where('s.step_template_id', id)
        .orderBy([{ column: 'p.name' }, { column: 's.sort_order' }])
        .select({ project_name: 'p.name', step_name: 's.name' });
      return rows.map((r) => ({ projectName: r.project_name, stepName: r.step_name }));
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
    },
  };
}
