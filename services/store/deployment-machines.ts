/** The engine's read of machines: who is in an environment, and whether its agent is alive. */
import { whereIdIn } from './id-arrays.ts';
import type { Db } from './db.ts';
import { jsonDate } from './json-rows.ts';

export interface TargetMachine {
  machineId: string;
  workspaceId: string;
  name: string;
  tagIds: string[];
  enabled: boolean;
  isRegistered: boolean;
  lastSeenUtc: Date | null;
  /** Since when the agent has had no session; null while connected (or never connected). */
  disconnectedUtc: Date | null;
}

export interface MachineRow {
  id: string;
  workspace_id: string;
  name: string;
  tag_ids: string[];
  enabled: boolean;
  agent_credential_hash: string | null;
  last_seen_at: Date | null;
  disconnected_at: Date | null;
}

/** listInEnvironment's row: epoch milliseconds come as numeric text (exact; Date keeps whole ms). */
interface LeanMachineRow extends Pick<MachineRow, 'id' | 'workspace_id' | 'name' | 'tag_ids' | 'enabled'> {
  is_registered: boolean;
  last_seen_ms: string | null;
  disconnected_ms: string | null;
}

export function toTargetMachine(row: MachineRow): TargetMachine {
  return {
    machineId: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    tagIds: row.tag_ids,
    enabled: row.enabled,
    isRegistered: row.agent_credential_hash !== null,
    lastSeenUtc: row.last_seen_at,
    disconnectedUtc: row.disconnected_at,
  };
}

/** A machine read as JSON (json_build_object of MACHINE_COLUMNS): timestamps come as text. */
export function targetMachineFromJson(row: Record<string, unknown>): TargetMachine {
  return toTargetMachine({
    ...(row as unknown as MachineRow),
    last_seen_at: jsonDate(row.last_seen_at),
    disconnected_at: jsonDate(row.disconnected_at),
  });
}

/** MACHINE_COLUMNS of `m` as one JSON object (see targetMachineFromJson). */
export const MACHINE_JSON_SQL = `json_build_object('id', m.id, 'workspace_id', m.workspace_id, 'name', m.name, 'tag_ids', m.tag_ids, 'enabled', m.enabled, 'agent_credential_hash', m.agent_credential_hash, 'last_seen_at', m.last_seen_at, 'disconnected_at', m.disconnected_at)`;

export const MACHINE_COLUMNS = [
  'id',
  'workspace_id',
  'name',
  'tag_ids',
  'enabled',
  'agent_credential_hash',
  'last_seen_at',
  'disconnected_at',
] as const satisfies ReadonlyArray<keyof MachineRow>;

export function deploymentMachinesStore(db: Db) {
  return {
    /**
     * Every machine of the environment: what validating a deployment plans from, before its first
     * dispatch (10,000 rows for a fleet). Read lean: whether a credential is set rather than its
     * hash, and times as epoch milliseconds, which parse as numbers, not as timestamp text (a
     * fifth of this read's CPU at 10,000 rows).
     */
    async listInEnvironment(environmentId: string): Promise<TargetMachine[]> {
      const rows: LeanMachineRow[] = await db('machines as m')
        .join('machine_environments as me', 'me.machine_id', 'm.id')
        .where('me.environment_id', environmentId)
        .select(
          'm.id',
          'm.workspace_id',
          'm.name',
          'm.tag_ids',
          'm.enabled',
          db.raw('m.agent_credential_hash is not null as is_registered'),
          db.raw('extract(epoch from m.last_seen_at) * 1000 as last_seen_ms'),
          db.raw('extract(epoch from m.disconnected_at) * 1000 as disconnected_ms'),
        );
      const dateOf = (ms: string | null) => (ms === null ? null : new Date(Number(ms)));
      return rows.map((row) => ({
        machineId: row.id,
        workspaceId: row.workspace_id,
        name: row.name,
        tagIds: row.tag_ids,
        enabled: row.enabled,
        isRegistered: row.is_registered,
        lastSeenUtc: dateOf(row.last_seen_ms),
        disconnectedUtc: dateOf(row.disconnected_ms),
      }));
    },
    async get(machineId: string): Promise<TargetMachine | null> {
      const row = await db<MachineRow>('machines')
        .where({ id: machineId })
        .first(...MACHINE_COLUMNS);
      return row ? toTargetMachine(row) : null;
    },
    async getMany(machineIds: readonly string[]): Promise<Map<string, TargetMachine>> {
      if (machineIds.length === 0) return new Map();
      const rows: MachineRow[] = await whereIdIn(db('machines'), 'id', machineIds).select(...MACHINE_COLUMNS);
      return new Map(rows.map((row) => [row.id, toTargetMachine(row)]));
    },
  };
}
