/**
 * gantry machine add NAME --env E... [--tag T]...: creates the machine and prints the command that
 * starts its agent with the one-time registration token (README: node gantry-agent.mjs).
 */
import type { Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { UsageError } from '../exit-codes.ts';
import { repeatable } from '../repeatable.ts';

/** The agent gateway's default port (GANTRY_GRPC_PORT). */
const DEFAULT_GRPC_PORT = 8081;

export function registerMachineAdd(machine: Command, io: Io): void {
  machine
    .command('add')
    .description('Add a target machine and print the command that starts its agent')
    .argument('<name>', 'machine name')
    .option('--env <name|id>', 'environment (repeatable)', repeatable)
    .option('--tag <name|id>', 'tag (repeatable)', repeatable)
    .option(
      '--agent-server <host:port>',
      `the agent gateway agents connect to (default: the --url host, port ${DEFAULT_GRPC_PORT})`,
    )
    .action(
      async (name: string, options: { env?: string[]; tag?: string[]; agentServer?: string }, command: Command) => {
        const { api, out, resolver } = contextOf(command, io);
        const envs = options.env ?? [];
        if (envs.length === 0) throw new UsageError('Give at least one --env');
        const { workspaceId } = await resolver.workspace();
        const [environmentIds, tagIds] = await Promise.all([
          resolver.environmentIds(workspaceId, envs),
          resolver.tagIds(workspaceId, options.tag ?? []),
        ]);
        const created = unwrap(
          await api.client.POST('/api/machine', { body: { workspaceId, name, environmentIds, tagIds } }),
        );
        const server = options.agentServer ?? `${new URL(api.root).hostname}:${DEFAULT_GRPC_PORT}`;
        // The agent pins the gateway's CA by this fingerprint (null: the gateway serves plaintext).
        const trust = created.caFingerprint
          ? `GANTRY_AGENT_CA_FINGERPRINT=${created.caFingerprint}`
          : 'GANTRY_AGENT_INSECURE=1';
        const agentCommand = `GANTRY_SERVER=${server} GANTRY_AGENT_TOKEN=${created.registrationToken} ${trust} node gantry-agent.mjs`;
        out.result(
          {
            machineId: created.machineId,
            name,
            environmentIds,
            tagIds,
            registrationToken: created.registrationToken,
            installCommand: created.installCommand,
            agentCommand,
          },
          (v) =>
            `Added machine ${v.name} (${v.machineId}). Install its agent on the machine as a service (Linux with Node.js >= 20; the token works once, for 24 h):\n\n  ${v.installCommand}\n\nOr run the agent by hand:\n\n  ${v.agentCommand}\n`,
        );
      },
    );
}
