/** gantry release deploy --project P --version V (--env E... | --phase PH) [--exclude-step NAME]... [--at ISO-8601] [--wait …] */
import type { Command } from 'commander';
import { contextOf, type Io } from '../context.ts';
import {
  addTargetOptions,
  addWaitOptions,
  startDeployments,
  type TargetOptions,
  type WaitFlags,
} from '../deployment-start.ts';

export function registerReleaseDeploy(release: Command, io: Io): void {
  const command = release
    .command('deploy')
    .description('Deploy a release (by project and exact version) to environments or a lifecycle phase');
  addTargetOptions(command).requiredOption('--version <version>', 'release version, exactly as created');
  addWaitOptions(command, true).action(async (options: TargetOptions & WaitFlags, cmd: Command) =>
    startDeployments(contextOf(cmd, io), options),
  );
}
