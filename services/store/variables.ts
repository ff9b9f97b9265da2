/**
 * Variables and their scoped values (contract §3). Project variables have project_id set;
 * workspace variables have it null and reach projects through project_workspace_variables.
 * Variables and values are soft-deleted. Sensitive values live only in value_encrypted.
 */
import type { Knex } from 'knex';
import { newId, type Page, type Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export const VariableType = { Text: 'Text', Sensitive: 'Sensitive' } as const;
export type VariableType = (typeof VariableType)[keyof typeof VariableType];

export interface Variable {
  id: string;
  workspaceId: string;
  projectId: string | null;
  name: string;
  description: string | null;
  variableType: VariableType;
}

/** The scope of a value; an empty list means "not scoped on this dimension". */
export interface VariableValueFilters {
  environmentIds: string[];
  machineIds: string[];
  tagFilter: Array<{ tagIds: string[] }>;
  stepIds: string[];
  channelIds: string[];
}

export interface VariableValue {
  id: string;
  variableId: string;
  /** Set for Text variables. */
  plain: string | null;
  /** AES-GCM ciphertext (SecretBox) for Sensitive variables. */
  encrypted: string | null;
  filters: VariableValueFilters;
}

export interface VariableWithValues extends Variable {
  values: VariableValue[];
}

export interface VariableRow {
  id: string;
  workspace_id: string;
  project_id: string | null;
  name: string;
  description: string | null;
  variable_type: string;
  created_at: Date;
  deleted_at: Date | null;
}

export interface VariableValueRow {
  id: string;
  variable_id: string;
  value_plain: string | null;
  value_encrypted: string | null;
  environments_filter: string[];
  machine_filter: string[];
  tag_filter: Array<{ tagIds: string[] }>;
  step_filter: string[];
  channel_filter: string[];
  created_at: Date;
  deleted_at: Date | null;
}

export function toVariable(row: VariableRow): Variable {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    variableType: row.variable_type === VariableType.Sensitive ? VariableType.Sensitive : VariableType.Text,
  };
}

export function toValue(row: VariableValueRow): VariableValue {
  return {
    id: row.id,
    variableId: row.variable_id,
    plain: row.value_plain,
    encrypted: row.value_encrypted,
    filters: {
      environmentIds: row.environments_filter,
      machineIds: row.machine_filter,
      tagFilter: row.tag_filter,
      stepIds: row.step_filter,
      channelIds: row.channel_filter,
    },
  };
}

// jsonb columns: node-postgres would send a JS array as a PostgreSQL array literal, so stringify.
function filterColumns(filters: Partial<VariableValueFilters>): Record<string, string> {
  const row: Record<string, string> = {};
  if (filters.environmentIds !== undefined) row.environments_filter = JSON.stringify(filters.environmentIds);
  if (filters.machineIds !== undefined) row.machine_filter = JSON.stringify(filters.machineIds);
  if (filters.tagFilter !== undefined) row.tag_filter = JSON.stringify(filters.tagFilter);
  if (filters.stepIds !== undefined) row.step_filter = JSON.stringify(filters.stepIds);
  if (filters.channelIds !== undefined) row.channel_filter = JSON.stringify(filters.channelIds);
  return row;
}

export function variablesStore(db: Db) {
  const liveVariables = () => db<VariableRow>('variables').whereNull('deleted_at');
  const liveValues = () => db<VariableValueRow>('variable_values').whereNull('deleted_at');

  async function valuesOf(variableIds: readonly string[]): Promise<Map<string, VariableValue[]>> {
    const byVariable = new Map<string, VariableValue[]>();
    if (variableIds.length === 0) return byVariable;
    const rows = await liveValues()
      .whereIn('variable_id', variableIds)
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    for (const row of rows) {
      const list = byVariable.get(row.variable_id) ?? [];
      list.push(toValue(row));
      byVariable.set(row.variable_id, list);
    }
    return byVariable;
  }

  async function withValues(variables: Variable[]): Promise<VariableWithValues[]> {
    const values = await valuesOf(variables.map((v) => v.id));
    return variables.map((v) => ({ ...v, values: values.get(v.id) ?? [] }));
  }

  /** How many of `ids` exist in `table` under `where` (ids are deduplicated by the caller). */
  async function countExisting(
    table: string,
    ids: readonly string[],
    where: (q: Knex.QueryBuilder) => void,
  ): Promise<number> {
    if (ids.length === 0) return 0;
    const query = db(table).whereIn('id', ids);
    where(query);
    const [row] = await query.count({ n: '*' });
    return Number(row?.n ?? 0);
  }

  return {
    /** A non-deleted variable (project or workspace), or null. */
    async get(id: string): Promise<Variable | null> {
      const row = await liveVariables().where({ id }).first();
      return row ? toVariable(row) : null;
    },
    /** A non-deleted value of a non-deleted variable, with that variable, or null. */
    async getValue(id: string): Promise<{ value: VariableValue; variable: Variable } | null> {
      const row = await liveValues().where({ id }).first();
      if (!row) return null;
      const variable = await liveVariables().where({ id: row.variable_id }).first();
      return variable ? { value: toValue(row), variable: toVariable(variable) } : null;
    },
    async listForProject(projectId: string): Promise<VariableWithValues[]> {
      const rows = await liveVariables().where({ project_id: projectId }).orderByRaw('lower(name), id');
      return withValues(rows.map(toVariable));
    },
    async listForWorkspace(workspaceId: string, page: Page): Promise<Paged<VariableWithValues>> {
      const query = liveVariables().where({ workspace_id: workspaceId }).whereNull('project_id');
      const paged = await pageOf(query, page, [{ column: 'name' }, { column: 'id' }], toVariable);
      return { items: await withValues(paged.items), totalCount: paged.totalCount };
    },
    /** The live values of one variable, oldest first. */
    async values(variableId: string): Promise<VariableValue[]> {
      return (await valuesOf([variableId])).get(variableId) ?? [];
    },
    async insert(variable: Variable, at: Date): Promise<void> {
      await db('variables').insert({
        id: variable.id,
        workspace_id: variable.workspaceId,
        project_id: variable.projectId,
        name: variable.name,
        description: variable.description,
        variable_type: variable.variableType,
        created_at: at,
      });
    },
    async update(id: string, patch: Partial<Pick<Variable, 'name' | 'description' | 'variableType'>>): Promise<void> {
      const row: Partial<VariableRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.variableType !== undefined) row.variable_type = patch.variableType;
      if (Object.keys(row).length > 0) await liveVariables().where({ id }).update(row);
    },
    /** Soft-deletes a variable and its values, and drops it from every project's imports. */
    async softDelete(id: string, at: Date): Promise<void> {
      await liveValues().where({ variable_id: id }).update({ deleted_at: at });
      await liveVariables().where({ id }).update({ deleted_at: at });
      await db('project_workspace_variables').where({ variable_id: id }).delete();
    },
    async insertValue(value: VariableValue, at: Date): Promise<void> {
      await db('variable_values').insert({
        id: value.id,
        variable_id: value.variableId,
        value_plain: value.plain,
        value_encrypted: value.encrypted,
        ...filterColumns(value.filters),
        created_at: at,
      });
    },
    /** `stored` replaces both value columns when given (exactly one of them is non-null). */
    async updateValue(
      id: string,
      patch: {
        stored?: { plain: string | null; encrypted: string | null } | undefined;
        filters?: Partial<VariableValueFilters> | undefined;
      },
    ): Promise<void> {
      const row: Record<string, string | null> = { ...filterColumns(patch.filters ?? {}) };
      if (patch.stored) {
        row.value_plain = patch.stored.plain;
        row.value_encrypted = patch.stored.encrypted;
      }
      if (Object.keys(row).length > 0) await liveValues().where({ id }).update(row);
    },
    async softDeleteValue(id: string, at: Date): Promise<void> {
      await liveValues().where({ id }).update({ deleted_at: at });
    },

    /** Live workspace variables imported into a project, by name. */
    async imports(projectId: string): Promise<Variable[]> {
      const rows = await db<VariableRow>('variables as v')
        .join('project_workspace_variables as i', 'i.variable_id', 'v.id')
        .where('i.project_id', projectId)
        .whereNull('v.deleted_at')
        .orderByRaw('lower(v.name), v.id')
        .select('v.*');
      return rows.map(toVariable);
    },
    async setImports(projectId: string, variableIds: readonly string[]): Promise<void> {
      await db('project_workspace_variables').where({ project_id: projectId }).delete();
      if (variableIds.length > 0) {
        await db('project_workspace_variables').insert(
          variableIds.map((id) => ({ project_id: projectId, variable_id: id })),
        );
      }
    },
    async addImport(projectId: string, variableId: string): Promise<void> {
      await db('project_workspace_variables')
        .insert({ project_id: projectId, variable_id: variableId })
        .onConflict(['project_id', 'variable_id'])
        .ignore();
    },
    /** True when an import was removed. */
    async removeImport(projectId: string, variableId: string): Promise<boolean> {
      return (
        (await db('project_workspace_variables').where({ project_id: projectId, variable_id: variableId }).delete()) > 0
      );
    },
    /** The live workspace-level variables of a workspace among `ids`. */
    async workspaceVariables(workspaceId: string, ids: readonly string[]): Promise<Variable[]> {
      if (ids.length === 0) return [];
      const rows = await liveVariables()
        .where({ workspace_id: workspaceId })
        .whereNull('project_id')
        .whereIn('id', ids);
      return rows.map(toVariable);
    },

    /**
     * Every live value a project sees: its own variables' and its imported workspace variables'.
     * Values come oldest first, which the resolver uses as its last tie-break.
     */
    async candidates(projectId: string): Promise<Array<{ variable: Variable; value: VariableValue }>> {
      const own = await liveVariables().where({ project_id: projectId });
      const imported = await db<VariableRow>('variables as v')
        .join('project_workspace_variables as i', 'i.variable_id', 'v.id')
        .where('i.project_id', projectId)
        .whereNull('v.deleted_at')
        .select('v.*');
      const variables = [...own, ...imported].map(toVariable);
      const values = await valuesOf(variables.map((v) => v.id));
      return variables.flatMap((variable) => (values.get(variable.id) ?? []).map((value) => ({ variable, value })));
    },

    /**
     * Copies a project's live variables, values and imports to another project (project clone).
     * Step and channel IDs in filters are mapped through `idMap` (old → new); IDs it lacks are
     * kept, which can only narrow a value's scope, never widen it. Ciphertext is copied as is.
     */
    async copyProjectVariables(
      fromProjectId: string,
      toProjectId: string,
      idMap: ReadonlyMap<string, string>,
      at: Date,
    ): Promise<void> {
      const target: { workspace_id: string } | undefined = await db('projects')
        .where({ id: toProjectId })
        .first('workspace_id');
      if (!target) return;
      const variables = await liveVariables().where({ project_id: fromProjectId });
      const values = await valuesOf(variables.map((v) => v.id));
      const remap = (ids: string[]) => ids.map((id) => idMap.get(id) ?? id);
      // Distinct, increasing timestamps keep the values' order, the resolver's last tie-break.
      let tick = at.getTime();
      for (const row of variables) {
        const variableId = newId();
        await db('variables').insert({
          ...row,
          id: variableId,
          project_id: toProjectId,
          workspace_id: target.workspace_id,
          created_at: at,
          deleted_at: null,
        });
        for (const value of values.get(row.id) ?? []) {
          const filters = {
            ...value.filters,
            stepIds: remap(value.filters.stepIds),
            channelIds: remap(value.filters.channelIds),
          };
          await db('variable_values').insert({
            id: newId(),
            variable_id: variableId,
            value_plain: value.plain,
            value_encrypted: value.encrypted,
            ...filterColumns(filters),
            created_at: new Date(tick++),
          });
        }
      }
      const imported = await db('project_workspace_variables')
        .where({ project_id: fromProjectId })
        .select('variable_id');
      if (imported.length > 0) {
        await db('project_workspace_variables')
          .insert(
            imported.map((r: { variable_id: string }) => ({ project_id: toProjectId, variable_id: r.variable_id })),
          )
          .onConflict(['project_id', 'variable_id'])
          .ignore();
      }
    },

    // Existence checks for value filters. Machines, steps and channels have their own stores, but
    // these small counts keep this aggregate independent of them.
    countEnvironments: (workspaceId: string, ids: readonly string[]) =>
      countExisting('environments', ids, (q) => {
        q.where({ workspace_id: workspaceId }).whereNull('deleted_at');
      }),
    countMachines: (workspaceId: string, ids: readonly string[]) =>
      countExisting('machines', ids, (q) => {
        q.where({ workspace_id: workspaceId });
      }),
    countSteps: (projectId: string, ids: readonly string[]) =>
      countExisting('project_steps', ids, (q) => {
        q.where({ project_id: projectId });
      }),
    countChannels: (projectId: string, ids: readonly string[]) =>
      countExisting('channels', ids, (q) => {
        q.where({ project_id: projectId });
      }),
  };
}
