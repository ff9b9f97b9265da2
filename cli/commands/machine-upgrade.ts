/** gantry machine upgrade (--machine NAME|ID... | --env E): asks agents to upgrade to the control plane's version. */
import { Option, type Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { UsageError } from '../exit-codes.ts';
import { renderTable } from '../output.ts';
import { findByNameOrId, listAll } from '../resolve.ts';
import { repeatable } from '../repeatable.ts';

export function registerMachineUpgrade(machine: Command, io: Io): void {
  machine
    .command('upgrade')
    .description("Upgrade machines' agents to the version this control plane ships (running steps finish first)")
    .option('--machine <name|id>', 'machine (repeatable)', repeatable)
    .addOption(new Option('--env <name|id>', 'every machine of this environment').conflicts('machine'))
    .action(async (options: { machine?: string[]; env?: string }, command: Command) => {
      const { api, out, resolver } = contextOf(command, io);
      const wanted = options.machine ?? [];
      if (wanted.length === 0 && options.env === undefined)
        throw new UsageError('Name the machines: --machine (repeatable) or --env');
      const { workspaceId } = await resolver.workspace();
      let machineIds: string[] | undefined;
      let environmentId: string | undefined;
      if (options.env !== undefined) {
        [environmentId] = await resolver.environmentIds(workspaceId, [options.env]);
      } else {
        const machines = await listAll(async (skip, take) => {
          const page = unwrap(await api.client.GET('/api/machine', { params: { query: { workspaceId, skip, take } } }));
          return { items: page.machines, totalCount: page.totalCount };
        });
        machineIds = wanted.map((value) => {
          const { found, ambiguous } = findByNameOrId(
            machines,
            value,
            (m) => m.machineId,
            (m) => m.name,
          );
          if (found) return found.machineId;
          throw new UsageError(
            ambiguous.length > 0
              ? `--machine '${value}' matches ${ambiguous.length} machines: give its ID`
              : `--machine '${value}': no machine of the workspace has that name or ID`,
          );
        });
      }
      const result = unwrap(
        await api.client.POST('/api/machine/upgrade', {
          body: {
            workspaceId,
            ...(machineIds === undefined ? {} : { machineIds }),
            ...(environmentId === undefined ? {} : { environmentId }),
          },
        }),
      );
      out.result(
        result,
        (v) =>
          `Agent version ${v.version}\n` +
          renderTable(
            ['NAME', 'AGENT', 'OUTCOME', 'ID'],
            v.machines.map((m) => [m.name, m.agentVersion ?? '-', m.outcome, m.machineId]),
          ),
      );
    });
}
