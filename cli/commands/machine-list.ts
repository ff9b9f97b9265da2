/** gantry machine list: the workspace's machines with their environments, status and agent. */
import type { Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { renderTable } from '../output.ts';
import { listAll } from '../resolve.ts';
import { ago } from './status.ts';

export function registerMachineList(machine: Command, io: Io): void {
  machine
    .command('list')
    .description("List the workspace's machines")
    .action(async (_options: unknown, command: Command) => {
      const { api, out, resolver } = contextOf(command, io);
      const { workspaceId } = await resolver.workspace();
      const machines = await listAll(async (skip, take) => {
        const page = unwrap(await api.client.GET('/api/machine', { params: { query: { workspaceId, skip, take } } }));
        return { items: page.machines, totalCount: page.totalCount };
      });
      const value = {
        workspaceId,
        machines: machines.map((m) => ({
          machineId: m.machineId,
          name: m.name,
          status: m.status,
          enabled: m.enabled,
          environments: m.environments.map((e) => e.name),
          tagIds: m.tagIds,
          lastSeenUtc: m.lastSeenUtc,
          agentVersion: m.agentVersion,
          hostname: m.hostname,
        })),
      };
      out.result(value, (v, paint) =>
        renderTable(
          ['NAME', 'STATUS', 'ENVIRONMENTS', 'LAST SEEN', 'AGENT', 'ID'],
          v.machines.map((m) => [
            m.name,
            (m.status === 'Online' ? paint('green', m.status) : m.status) + (m.enabled ? '' : ' (disabled)'),
            m.environments.join(', '),
            m.lastSeenUtc ? ago(m.lastSeenUtc) : '-',
            m.agentVersion ?? '-',
            m.machineId,
          ]),
        ),
      );
    });
}
