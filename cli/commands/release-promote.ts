/** gantry release promote --project P [--version V] (--env E... | --phase PH) [--wait …]: by default the highest version. */
import type { Command } from 'commander';
import { contextOf, type Io } from '../context.ts';
import {
  addTargetOptions,
  addWaitOptions,
  startDeployments,
  type TargetOptions,
  type WaitFlags,
} from '../deployment-start.ts';

export function registerReleasePromote(release: Command, io: Io): void {
  const command = release
    .command('promote')
    .description("Deploy a project's release (default: its highest version by SemVer) to environments or a phase");
  addTargetOptions(command).option('--version <version>', 'release version, exactly as created (default: the highest)');
  addWaitOptions(command, true).action(async (options: TargetOptions & WaitFlags, cmd: Command) =>
    startDeployments(contextOf(cmd, io), options),
  );
}
