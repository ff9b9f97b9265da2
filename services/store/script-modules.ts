/**
 * Script modules (contract §3): shared script code of a workspace, and which projects import it.
 * The engine loads a project's imported modules of a step's language before the step's script.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface ScriptModule {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  script: string;
  scriptLanguage: string;
}

export interface ScriptModuleRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  script: string;
  script_language: string;
}

export function toScriptModule(row: ScriptModuleRow): ScriptModule {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    script: row.script,
    scriptLanguage: row.script_language,
  };
}

export function scriptModulesStore(db: Db) {
  const modules = () => db<ScriptModuleRow>('script_modules');
  const imports = () => db('project_script_modules');
  return {
    async get(id: string): Promise<ScriptModule | null> {
      const row = await modules().where({ id }).first();
      return row ? toScriptModule(row) : null;
    },
    /** The modules of a workspace among `ids` (unknown or foreign ones are simply absent). */
    async getMany(workspaceId: string, ids: readonly string[]): Promise<ScriptModule[]> {
      if (ids.length === 0) return [];
      return (await modules().where({ workspace_id: workspaceId }).whereIn('id', ids)).map(toScriptModule);
    },
    async list(workspaceId: string, page: Page): Promise<Paged<ScriptModule>> {
      return pageOf(modules().where({ workspace_id: workspaceId }), page, [{ column: 'name' }], toScriptModule);
    },
    async insert(module: ScriptModule): Promise<void> {
      await modules().insert({
        id: module.id,
        workspace_id: module.workspaceId,
        name: module.name,
        description: module.description,
        script: module.script,
        script_language: module.scriptLanguage,
      });
    },
    async update(
      id: string,
      patch: Partial<Pick<ScriptModule, 'name' | 'description' | 'script' | 'scriptLanguage'>>,
    ): Promise<void> {
      const row: Partial<ScriptModuleRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.script !== undefined) row.script = patch.script;
      if (patch.scriptLanguage !== undefined) row.script_language = patch.scriptLanguage;
      if (Object.keys(row).length > 0) await modules().where({ id }).update(row);
    },
    /** Deletes a module; imports by deleted projects go with it (ON DELETE CASCADE). */
    async delete(id: string): Promise<void> {
      await modules().where({ id }).delete();
    },
    /** Names of the live projects that import the module. */
    async importedBy(id: string): Promise<string[]> {
      const rows: Array<{ name: string }> = await imports()
        .join('projects as p', 'p.id', 'project_script_modules.project_id')
        .whereNull('p.deleted_at')
        .where({ script_module_id: id })
        .orderBy('p.name')
        .select('p.name');
      return rows.map((r) => r.name);
    },
    /** The modules a project imports, by name, scripts included (the engine loads them). */
    async importsOf(projectId: string): Promise<ScriptModule[]> {
      const rows: ScriptModuleRow[] = await modules()
        .join('project_script_modules as psm', 'psm.script_module_id', 'script_modules.id')
        .where('psm.project_id', projectId)
        .orderBy('script_modules.name')
        .select('script_modules.*');
      return rows.map(toScriptModule);
    },
    /** Replaces the project's imports with exactly `scriptModuleIds`. */
    async setImports(projectId: string, scriptModuleIds: readonly string[]): Promise<void> {
      await imports().where({ project_id: projectId }).delete();
      if (scriptModuleIds.length > 0) {
        await imports().insert(scriptModuleIds.map((id) => ({ project_id: projectId, script_module_id: id })));
      }
    },
    async addImport(projectId: string, scriptModuleId: string): Promise<void> {
      await imports()
        .insert({ project_id: projectId, script_module_id: scriptModuleId })
        .onConflict(['project_id', 'script_module_id'])
        .ignore();
    },
    /** False when the project did not import the module. */
    async removeImport(projectId: string, scriptModuleId: string): Promise<boolean> {
      return (await imports().where({ project_id: projectId, script_module_id: scriptModuleId }).delete()) > 0;
    },
  };
}
