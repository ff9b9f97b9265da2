/**
 * Machines (contract §3): deployment targets an agent runs on. The registration token and the
 * agent credential are stored only as SHA-256 hashes; the agent gateway finds machines by them.
 */
import { whereIdIn } from './id-arrays.ts';
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';

export interface MachineEnvironment {
  id: string;
  name: string;
}

/** What an agent reports about itself when it registers or sends a heartbeat. */
export interface AgentInfo {
  agentVersion?: string | null | undefined;
  os?: string | null | undefined;
  hostname?: string | null | undefined;
  /** Which of bash, sh, python3, pwsh are on the agent's PATH. */
  interpreters?: string[] | null | undefined;
  /** Bytes free in the agent's home; 0 or absent: not reported. */
  homeFreeBytes?: number | null | undefined;
}

export type AgentUpgradeState = 'Requested' | 'Started' | 'Succeeded' | 'Failed';

export interface AgentUpgrade {
  version: string;
  state: AgentUpgradeState;
  /** The agent's reason when Failed. */
  message: string | null;
  updatedUtc: Date;
}

export interface Machine {
  id: string;
  workspaceId: string;
  name: string;
  tagIds: string[];
  enabled: boolean;
  /** True once an agent traded a registration token for its credential. */
  isRegistered: boolean;
  lastSeenUtc: Date | null;
  /** Since when the machine's agent has had no session (its last one ended); null while connected. */
  disconnectedUtc: Date | null;
  agentVersion: string | null;
  os: string | null;
  hostname: string | null;
  /** As the agent last reported them; null when it never did (an older agent). */
  interpreters: string[] | null;
  homeFreeBytes: number | null;
  /** The enrollment key this machine enrolled itself with; null when created with POST /api/machine. */
  enrollmentKeyId: string | null;
  /** The last upgrade asked of its agent (POST /api/machine/upgrade) and what became of it; null: none. */
  upgrade: AgentUpgrade | null;
  /** Live (non-deleted) environments only, in their workspace order. */
  environments: MachineEnvironment[];
}

interface MachineRow {
  id: string;
  workspace_id: string;
  name: string;
  tag_ids: string[];
  enabled: boolean;
  registration_token_hash: string | null;
  registration_expires_at: Date | null;
  agent_credential_hash: string | null;
  last_seen_at: Date | null;
  session_id: string | null;
  disconnected_at: Date | null;
  agent_version: string | null;
  os: string | null;
  hostname: string | null;
  interpreters: string[] | null;
  /** bigint: pg returns it as a string. */
  home_free_bytes: string | number | null;
  enrollment_key_id: string | null;
  upgrade_version: string | null;
  upgrade_state: string | null;
  upgrade_message: string | null;
  upgrade_updated_at: Date | null;
}

function toMachine(row: MachineRow, environments: MachineEnvironment[]): Machine {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    tagIds: row.tag_ids,
    enabled: row.enabled,
    isRegistered: row.agent_credential_hash !== null,
    lastSeenUtc: row.last_seen_at,
    disconnectedUtc: row.disconnected_at,
    agentVersion: row.agent_version,
    os: row.os,
    hostname: row.hostname,
    interpreters: row.interpreters,
    homeFreeBytes: row.home_free_bytes === null ? null : Number(row.home_free_bytes),
    enrollmentKeyId: row.enrollment_key_id,
    upgrade:
      row.upgrade_version && row.upgrade_state && row.upgrade_updated_at
        ? {
            version: row.upgrade_version,
            state: row.upgrade_state as AgentUpgradeState,
            message: row.upgrade_message,
            updatedUtc: row.upgrade_updated_at,
          }
        : null,
    environments,
  };
}

/** Only the fields an agent reported are written; an absent field keeps its stored value. */
function infoColumns(info: AgentInfo): Partial<MachineRow> {
  const row: Partial<MachineRow> = {};
  if (info.agentVersion !== undefined) row.agent_version = info.agentVersion;
  if (info.os !== undefined) row.os = info.os;
  if (info.hostname !== undefined) row.hostname = info.hostname;
  if (info.interpreters !== undefined) row.interpreters = info.interpreters;
  if (info.homeFreeBytes) row.home_free_bytes = info.homeFreeBytes;
  return row;
}

/**
 * In ID order: the batched writes below lock their rows in it, so two of them touching the same
 * machines never deadlock.
 */
const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** recordConnected's answer for a machine that no longer exists. */
const NOT_CONNECTED = { offlineSince: null, pendingUpgrade: null } as const;

/** The version a machine's agent was asked to upgrade to and has not started on; null: none. */
function pendingUpgradeOf(row: Pick<MachineRow, 'upgrade_state' | 'upgrade_version'> | undefined): string | null {
  return row?.upgrade_state === 'Requested' ? row.upgrade_version : null;
}

export function machinesStore(db: Db) {
  const machines = () => db<MachineRow>('machines');

  /** The machines these credential hashes belong to, by hash (agents connecting together: one statement). */
  async function findByCredentialHashes(
    credentialHashes: readonly string[],
  ): Promise<Map<string, { id: string; workspaceId: string }>> {
    if (credentialHashes.length === 0) return new Map();
    const rows: Array<{ id: string; workspace_id: string; agent_credential_hash: string }> = await whereIdIn(
      machines(),
      'agent_credential_hash',
      credentialHashes,
    ).select('id', 'workspace_id', 'agent_credential_hash');
    return new Map(rows.map((row) => [row.agent_credential_hash, { id: row.id, workspaceId: row.workspace_id }]));
  }

  /**
   * recordConnected for many machines in one statement (agents connecting together), answered
   * by machine ID; a machine that does not exist (deleted meanwhile) has no answer.
   */
  async function recordConnectedMany(
    hellos: ReadonlyArray<{ id: string; sessionId: string; at: Date; info: AgentInfo }>,
  ): Promise<Map<string, { offlineSince: Date | null; pendingUpgrade: string | null }>> {
    if (hellos.length === 0) return new Map();
    const settles = `m.upgrade_version = h.agent_version AND m.upgrade_state IN ('Requested', 'Started')`;
    // Locked in ID order, as recordHeartbeats and recordDisconnects: batches never deadlock.
    const sorted = [...hellos].sort(byId);
    // A field the agent did not report is absent, so null here: the stored value stays.
    const input = sorted.map((h) => ({ id: h.id, session_id: h.sessionId, at: h.at, ...infoColumns(h.info) }));
    const result = await db.raw<{
      rows: Array<{ id: string; was: Date | null; upgrade_state: string | null; upgrade_version: string | null }>;
    }>(
      `UPDATE machines AS m SET session_id = h.session_id, disconnected_at = NULL, last_seen_at = h.at,
         agent_version = coalesce(h.agent_version, m.agent_version), os = coalesce(h.os, m.os),
         hostname = coalesce(h.hostname, m.hostname), interpreters = coalesce(h.interpreters, m.interpreters),
         home_free_bytes = coalesce(h.home_free_bytes, m.home_free_bytes),
         upgrade_state = CASE WHEN ${settles} THEN 'Succeeded' ELSE m.upgrade_state END,
         upgrade_message = CASE WHEN ${settles} THEN NULL ELSE m.upgrade_message END,
         upgrade_updated_at = CASE WHEN ${settles} THEN h.at ELSE m.upgrade_updated_at END
       FROM jsonb_to_recordset(?::jsonb) AS h(id text, session_id text, at timestamptz, agent_version text,
              os text, hostname text, interpreters text[], home_free_bytes bigint)
       JOIN (SELECT id, disconnected_at FROM machines WHERE id = ANY(?::text[]) ORDER BY id FOR UPDATE) AS before
         ON before.id = h.id
       WHERE m.id = h.id
       RETURNING m.id, before.disconnected_at AS was, m.upgrade_state, m.upgrade_version`,
      [JSON.stringify(input), sorted.map((h) => h.id)],
    );
    return new Map(
      result.rows.map((row) => [row.id, { offlineSince: row.was, pendingUpgrade: pendingUpgradeOf(row) }]),
    );
  }

  /** The live environments of each machine, keyed by machine ID. */
  async function environmentsOf(machineIds: readonly string[]): Promise<Map<string, MachineEnvironment[]>> {
    const byMachine = new Map<string, MachineEnvironment[]>(machineIds.map((id) => [id, []]));
    if (machineIds.length === 0) return byMachine;
    const rows: Array<{ machine_id: string; id: string; name: string }> = await db('machine_environments as me')
      .join('environments as e', 'e.id', 'me.environment_id')
      .whereNull('e.deleted_at')
      .modify((query) => {
        whereIdIn(query, 'me.machine_id', machineIds);
      })
      .orderBy([{ column: 'e.sort_order' }, { column: 'e.name' }])
      .select('me.machine_id', 'e.id', 'e.name');
    for (const row of rows) byMachine.get(row.machine_id)?.push({ id: row.id, name: row.name });
    return byMachine;
  }

  async function withEnvironments(rows: MachineRow[]): Promise<Machine[]> {
    const environments = await environmentsOf(rows.map((r) => r.id));
    return rows.map((row) => toMachine(row, environments.get(row.id) ?? []));
  }

  async function one(row: MachineRow | undefined): Promise<Machine | null> {
    if (!row) return null;
    const [machine] = await withEnvironments([row]);
    return machine ?? null;
  }

  return {
    async get(id: string): Promise<Machine | null> {
      return one(await machines().where({ id }).first());
    },

    /** See pendingUpgradeOf; read alone, as every session of a fleet asked to upgrade reads it. */
    async pendingUpgrade(id: string): Promise<string | null> {
      return pendingUpgradeOf(await machines().where({ id }).first('upgrade_state', 'upgrade_version'));
    },

    /** Names are unique per workspace, case-insensitively. */
    async findByName(workspaceId: string, name: string): Promise<Machine | null> {
      return one(
        await machines().where({ workspace_id: workspaceId }).whereRaw('lower(name) = lower(?)', [name]).first(),
      );
    },

    /** `filter`: a name substring, and a status given as "seen since" (Online) or not (Offline), or unregistered (Pending). */
    async list(
      workspaceId: string,
      page: Page,
      filter: { search?: string; status?: 'Pending' | 'Online' | 'Offline'; onlineSince?: Date } = {},
    ): Promise<Paged<Machine>> {
      const query = machines().where({ workspace_id: workspaceId });
      if (filter.search) query.whereRaw('strpos(lower(name), lower(?)) > 0', [filter.search]);
      if (filter.status === 'Pending') query.whereNull('agent_credential_hash');
      if (filter.status === 'Online')
        query.whereNotNull('agent_credential_hash').where('last_seen_at', '>', filter.onlineSince!);
      if (filter.status === 'Offline')
        query.whereNotNull('agent_credential_hash').where((q) => {
          q.whereNull('last_seen_at').orWhere('last_seen_at', '<=', filter.onlineSince!);
        });
      const [countRow] = await query.clone().count({ n: '*' });
      const rows = await query.clone().orderByRaw('lower(name), name').offset(page.skip).limit(page.take);
      return { items: await withEnvironments(rows), totalCount: Number(countRow?.n ?? 0) };
    },

    /** Inserts a machine with its environments and a pending registration token. */
    async insert(
      machine: { id: string; workspaceId: string; name: string; tagIds: string[]; environmentIds: string[] },
      registration: { tokenHash: string; expiresAt: Date },
    ): Promise<void> {
      await machines().insert({
        id: machine.id,
        workspace_id: machine.workspaceId,
        name: machine.name,
        tag_ids: machine.tagIds,
        registration_token_hash: registration.tokenHash,
        registration_expires_at: registration.expiresAt,
      });
      if (machine.environmentIds.length > 0) {
        await db('machine_environments').insert(
          machine.environmentIds.map((environmentId) => ({ machine_id: machine.id, environment_id: environmentId })),
        );
      }
    },

    async update(
      id: string,
      patch: { name?: string | undefined; tagIds?: string[] | undefined; enabled?: boolean | undefined },
    ): Promise<void> {
      const row: Partial<MachineRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.tagIds !== undefined) row.tag_ids = patch.tagIds;
      if (patch.enabled !== undefined) row.enabled = patch.enabled;
      if (Object.keys(row).length > 0) await machines().where({ id }).update(row);
    },

    /** Hard delete: machine_environments rows go with it (ON DELETE CASCADE). */
    async delete(id: string): Promise<void> {
      await machines().where({ id }).delete();
    },

    /** Replaces the machine's environment links with exactly `environmentIds`. */
    async setEnvironments(id: string, environmentIds: readonly string[]): Promise<void> {
      await db('machine_environments').where({ machine_id: id }).delete();
      if (environmentIds.length > 0) {
        await db('machine_environments').insert(
          environmentIds.map((environmentId) => ({ machine_id: id, environment_id: environmentId })),
        );
      }
    },

    async addEnvironment(id: string, environmentId: string): Promise<void> {
      await db('machine_environments')
        .insert({ machine_id: id, environment_id: environmentId })
        .onConflict(['machine_id', 'environment_id'])
        .ignore();
    },

    /** Removes one link; false when the machine was not in that environment. */
    async removeEnvironment(id: string, environmentId: string): Promise<boolean> {
      return (await db('machine_environments').where({ machine_id: id, environment_id: environmentId }).delete()) > 0;
    },

    /** Issues a new pending registration token (replacing any earlier unused one). */
    async setRegistrationToken(id: string, tokenHash: string, expiresAt: Date): Promise<void> {
      await machines().where({ id }).update({ registration_token_hash: tokenHash, registration_expires_at: expiresAt });
    },

    // ---- Agent gateway ----------------------------------------------------------------------

    /** The machine an unexpired, unused registration token belongs to, or null. */
    async findByRegistrationTokenHash(tokenHash: string, now: Date): Promise<Machine | null> {
      return one(
        await machines()
          .where({ registration_token_hash: tokenHash })
          .where('registration_expires_at', '>', now)
          .first(),
      );
    },

    /**
     * Trades the pending token for the agent's credential: clears the token (one-time) and replaces
     * any earlier credential, so a re-registered agent locks out its predecessor. Returns false when
     * no token was pending any more, i.e. a concurrent registration won the race.
     */
    async completeRegistration(id: string, credentialHash: string, info: AgentInfo, at?: Date): Promise<boolean> {
      const row: Partial<MachineRow> = {
        ...infoColumns(info),
        agent_credential_hash: credentialHash,
        registration_token_hash: null,
        registration_expires_at: null,
      };
      if (at) row.last_seen_at = at;
      const updated = await machines().where({ id }).whereNotNull('registration_token_hash').update(row);
      return updated > 0;
    },

    /** A machine an enrollment key created: registered at once, with its agent's credential. */
    async insertEnrolled(
      machine: { id: string; workspaceId: string; name: string; tagIds: string[]; environmentIds: string[] },
      enrollment: { enrollmentKeyId: string; credentialHash: string; info: AgentInfo; at: Date },
    ): Promise<void> {
      await machines().insert({
        id: machine.id,
        workspace_id: machine.workspaceId,
        name: machine.name,
        tag_ids: machine.tagIds,
        enrollment_key_id: enrollment.enrollmentKeyId,
        agent_credential_hash: enrollment.credentialHash,
        last_seen_at: enrollment.at,
        ...infoColumns(enrollment.info),
      });
      if (machine.environmentIds.length > 0) {
        await db('machine_environments').insert(
          machine.environmentIds.map((environmentId) => ({ machine_id: machine.id, environment_id: environmentId })),
        );
      }
    },

    /** A re-enrolled machine's new credential: the old one stops working. */
    async replaceCredential(id: string, credentialHash: string, info: AgentInfo, at: Date): Promise<void> {
      await machines()
        .where({ id })
        .update({ ...infoColumns(info), agent_credential_hash: credentialHash, last_seen_at: at });
    },

    /**
     * The machine whose agent holds this credential (disabled ones too), or null: only what a
     * connection needs (no environments), as 10,000 agents reconnecting after a replica restart
     * each read it.
     */
    async findByCredentialHash(credentialHash: string): Promise<{ id: string; workspaceId: string } | null> {
      return (await findByCredentialHashes([credentialHash])).get(credentialHash) ?? null;
    },
    findByCredentialHashes,

    /**
     * Many agents' heartbeats in one statement (a fleet of 10,000 beats ~670 times a second).
     * A time never moves back: a Hello recorded meanwhile may be newer than a batched beat.
     */
    async recordHeartbeats(beats: ReadonlyArray<{ id: string; at: Date; homeFreeBytes?: number }>): Promise<void> {
      if (beats.length === 0) return;
      const sorted = [...beats].sort(byId);
      await db.raw(
        `UPDATE machines AS m SET last_seen_at = greatest(m.last_seen_at, b.at),
           home_free_bytes = coalesce(b.free, m.home_free_bytes)
         FROM unnest(?::text[], ?::timestamptz[], ?::bigint[]) AS b(id, at, free)
         WHERE m.id = b.id`,
        [
          sorted.map((b) => b.id),
          sorted.map((b) => b.at) as unknown as string[],
          sorted.map((b) => (b.homeFreeBytes ? b.homeFreeBytes : null)) as unknown as string[],
        ],
      );
    },

    /** Machines of the workspace in this environment (live machines only: deleted ones are gone). */
    async listInEnvironment(workspaceId: string, environmentId: string): Promise<Machine[]> {
      const rows = await machines()
        .where({ workspace_id: workspaceId })
        .whereIn('id', db('machine_environments').where({ environment_id: environmentId }).select('machine_id'))
        .orderByRaw('lower(name), name');
      return withEnvironments(rows);
    },

    /** Asks these machines' agents to upgrade to `version` (a new request replaces any earlier one). */
    async requestUpgrade(ids: readonly string[], version: string, at: Date): Promise<void> {
      if (ids.length === 0) return;
      await machines()
        .modify((query) => {
          whereIdIn(query, 'id', ids);
        })
        .update({
          upgrade_version: version,
          upgrade_state: 'Requested',
          upgrade_message: null,
          upgrade_updated_at: at,
        });
    },

    /**
     * Records what became of the upgrade to `version`, only while that is the one asked for and it
     * is not settled (a late report of an older request changes nothing). True when recorded.
     */
    async recordUpgrade(
      id: string,
      version: string,
      state: AgentUpgradeState,
      message: string | null,
      at: Date,
    ): Promise<boolean> {
      const updated = await machines()
        .where({ id, upgrade_version: version })
        .whereIn('upgrade_state', ['Requested', 'Started'])
        .update({ upgrade_state: state, upgrade_message: message, upgrade_updated_at: at });
      return updated > 0;
    },

    async recordHeartbeat(id: string, at: Date, info: AgentInfo = {}): Promise<void> {
      await machines()
        .where({ id })
        .update({ ...infoColumns(info), last_seen_at: at });
    },

    /**
     * A session of the machine's agent started (Hello): it becomes the current one. Returns since
     * when the machine had been without a session (null when it was not marked disconnected), and
     * its pending upgrade (pendingUpgradeOf), so a Hello needs no read of its own for it. An
     * upgrade asked for is Succeeded once the agent runs that version, in the same statement
     * (a reader never sees the new version with the upgrade still Started). A session of the old
     * version settles nothing: a draining agent reconnects as itself when a replica goes away; a
     * failure is what the agent reports. A fleet reconnecting at once (a replica restart) says
     * 10,000 Hellos: the engine records those that come together with recordConnectedMany.
     */
    async recordConnected(
      id: string,
      sessionId: string,
      at: Date,
      info: AgentInfo,
    ): Promise<{ offlineSince: Date | null; pendingUpgrade: string | null }> {
      return (await recordConnectedMany([{ id, sessionId, at, info }])).get(id) ?? NOT_CONNECTED;
    },
    recordConnectedMany,

    /**
     * Sessions that ended, in one statement (a replica stopping, or a network cut, ends thousands
     * at once): each machine is disconnected from its `at`, unless another session already
     * replaced the one that ended (then nothing changes). Answers the machines marked disconnected.
     */
    async recordDisconnects(ended: ReadonlyArray<{ id: string; sessionId: string; at: Date }>): Promise<string[]> {
      if (ended.length === 0) return [];
      // In ID order, as recordHeartbeats: two statements locking the same rows never deadlock.
      const sorted = [...ended].sort(byId);
      const { rows } = await db.raw<{ rows: Array<{ id: string }> }>(
        `UPDATE machines AS m SET disconnected_at = e.at
         FROM unnest(?::text[], ?::text[], ?::timestamptz[]) AS e(id, session_id, at)
         WHERE m.id = e.id AND m.session_id = e.session_id AND m.disconnected_at IS NULL
         RETURNING m.id`,
        [sorted.map((e) => e.id), sorted.map((e) => e.sessionId), sorted.map((e) => e.at)],
      );
      return rows.map((row) => row.id);
    },
  };
}
