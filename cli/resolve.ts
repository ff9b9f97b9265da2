/**
 * Names or IDs → what the API needs. Workspaces, projects and machines' environments and tags
 * are looked up in lists (one request each); environments, phases and channels that the API
 * takes by name are sent as given, and only when the API refuses one as unknown is it looked up
 * as an ID and the request sent again with the name (a refused request created nothing). So the
 * common case — names — costs no extra request.
 */
import { GantryApiError, unwrap, type components, type paths } from '../client/index.ts';
import type { Api } from './api.ts';
import { UsageError } from './exit-codes.ts';

type Json<P extends keyof paths, M extends 'get'> = paths[P][M] extends {
  responses: { 200: { content: { 'application/json': infer T } } };
}
  ? T
  : never;

export type Workspace = Json<'/api/workspace', 'get'>['workspaces'][number];
export type Project = Json<'/api/project', 'get'>['projects'][number];
export type Environment = Json<'/api/environment', 'get'>['environments'][number];
export type ErrorBody = components['schemas']['ErrorBody'];

const PAGE = 500;
/** Lists longer than this are not scanned for a name (20 pages): give the ID instead. */
const MAX_PAGES = 20;

/** All items of a paged list (`take` 500, at most 20 pages), or those read until `enough` says so. */
export async function listAll<T>(
  page: (skip: number, take: number) => Promise<{ items: T[]; totalCount: number }>,
  enough: () => boolean = () => false,
) {
  const items: T[] = [];
  for (let i = 0; i < MAX_PAGES; i++) {
    const { items: batch, totalCount } = await page(items.length, PAGE);
    items.push(...batch);
    if (batch.length === 0 || items.length >= totalCount || enough()) break;
  }
  return items;
}

/** The single item whose ID is `value`, else whose name is `value` (exactly, then ignoring case). */
export function findByNameOrId<T>(
  items: T[],
  value: string,
  idOf: (item: T) => string,
  nameOf: (item: T) => string,
): { found: T | null; ambiguous: T[] } {
  const byId = items.find((item) => idOf(item) === value);
  if (byId) return { found: byId, ambiguous: [] };
  for (const match of [
    (item: T) => nameOf(item) === value,
    (item: T) => nameOf(item).toLowerCase() === value.toLowerCase(),
  ]) {
    const named = items.filter(match);
    if (named.length === 1) return { found: named[0]!, ambiguous: [] };
    if (named.length > 1) return { found: null, ambiguous: named };
  }
  return { found: null, ambiguous: [] };
}

/** True when the API refused the request as naming something unknown in `property` (400 + validationErrors). */
export function refusedAsUnknown(error: unknown, property: string): boolean {
  return (
    error instanceof GantryApiError &&
    error.status === 400 &&
    (error.body?.validationErrors ?? []).some((v) => v.property.toLowerCase() === property.toLowerCase())
  );
}

/** Replaces each value that is the ID of an item by the item's name; null when none was an ID. */
export function idsToNames<T>(
  values: string[],
  items: T[],
  idOf: (item: T) => string,
  nameOf: (item: T) => string,
): string[] | null {
  const byId = new Map(items.map((item) => [idOf(item), nameOf(item)]));
  const mapped = values.map((v) => byId.get(v) ?? v);
  return mapped.some((v, i) => v !== values[i]) ? mapped : null;
}

/** The IDs of the items named (or identified) by `values`; an unknown one is bad usage, naming the choices. */
function idsOf<T>(
  option: string,
  values: string[],
  items: T[],
  idOf: (item: T) => string,
  nameOf: (item: T) => string,
): string[] {
  return values.map((value) => {
    const { found } = findByNameOrId(items, value, idOf, nameOf);
    if (!found)
      throw new UsageError(
        `${option} '${value}': none has that name or ID (there are: ${items.map(nameOf).join(', ')})`,
      );
    return idOf(found);
  });
}

export class Resolver {
  readonly #api: Api;
  readonly #workspaceOption: string | undefined;
  #workspace: Promise<Workspace> | null = null;

  constructor(api: Api, workspaceOption: string | undefined) {
    this.#api = api;
    this.#workspaceOption = workspaceOption;
  }

  /** --workspace NAME|ID, else the account's only workspace. */
  workspace(): Promise<Workspace> {
    this.#workspace ??= (async () => {
      const { workspaces } = unwrap(await this.#api.client.GET('/api/workspace'));
      const wanted = this.#workspaceOption;
      if (wanted === undefined) {
        if (workspaces.length === 1) return workspaces[0]!;
        if (workspaces.length === 0) throw new UsageError('The account sees no workspace');
        throw new UsageError(
          `The account sees ${workspaces.length} workspaces (${workspaces.map((w) => w.name).join(', ')}): choose one with --workspace`,
        );
      }
      const { found, ambiguous } = findByNameOrId(
        workspaces,
        wanted,
        (w) => w.workspaceId,
        (w) => w.name,
      );
      if (found) return found;
      throw new UsageError(
        ambiguous.length > 0
          ? `--workspace '${wanted}' matches ${ambiguous.length} workspaces: give its ID`
          : `--workspace '${wanted}': no workspace of the account has that name or ID (it sees ${workspaces.map((w) => w.name).join(', ')})`,
      );
    })();
    return this.#workspace;
  }

  /**
   * The project named `value` or with ID `value`. Without --workspace, projects of every
   * workspace the account sees are searched in one request. When none matches, `value` is
   * handed on as an ID, and the API's own answer says what is wrong with it.
   */
  async project(value: string): Promise<{ projectId: string; name: string | null; workspaceId: string | null }> {
    const client = this.#api.client;
    const workspaceId = this.#workspaceOption === undefined ? undefined : (await this.workspace()).workspaceId;
    const projects = await listAll(async (skip, take) => {
      const page = unwrap(await client.GET('/api/project', { params: { query: { workspaceId, skip, take } } }));
      return { items: page.projects, totalCount: page.totalCount };
    });
    const { found, ambiguous } = findByNameOrId(
      projects,
      value,
      (p) => p.projectId,
      (p) => p.name,
    );
    if (ambiguous.length > 0)
      throw new UsageError(
        `Project '${value}' is a name in ${ambiguous.length} workspaces: choose one with --workspace, or give the project's ID`,
      );
    if (!found) return { projectId: value, name: null, workspaceId: null };
    return { projectId: found.projectId, name: found.name, workspaceId: found.workspaceId };
  }

  async environments(workspaceId: string): Promise<Environment[]> {
    const client = this.#api.client;
    return listAll(async (skip, take) => {
      const page = unwrap(await client.GET('/api/environment', { params: { query: { workspaceId, skip, take } } }));
      return { items: page.environments, totalCount: page.totalCount };
    });
  }

  /** Environment names or IDs → IDs (machine add needs IDs). */
  async environmentIds(workspaceId: string, values: string[]): Promise<string[]> {
    const environments = await this.environments(workspaceId);
    return idsOf(
      '--env',
      values,
      environments,
      (e) => e.environmentId,
      (e) => e.name,
    );
  }

  /** Tag names or IDs → IDs. */
  async tagIds(workspaceId: string, values: string[]): Promise<string[]> {
    if (values.length === 0) return [];
    const client = this.#api.client;
    const tags = await listAll(async (skip, take) => {
      const page = unwrap(await client.GET('/api/tag', { params: { query: { workspaceId, skip, take } } }));
      return { items: page.tags, totalCount: page.totalCount };
    });
    return idsOf(
      '--tag',
      values,
      tags,
      (t) => t.tagId,
      (t) => t.name,
    );
  }
}
