/** gantry release create --project P --version V [--channel C] [--package ID:VERSION]... [--notes TEXT | --notes-file F] */
import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { UsageError } from '../exit-codes.ts';
import { idsToNames, refusedAsUnknown } from '../resolve.ts';
import { repeatable } from '../repeatable.ts';

interface CreateOptions {
  project: string;
  version: string;
  channel?: string;
  package?: string[];
  notes?: string;
  notesFile?: string;
  ignoreDefaultChannel?: boolean;
}

/** `Id:1.2.3` pairs → the packageVersions map (the version is what follows the last colon). */
export function parsePackageVersions(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const versions: Record<string, string> = {};
  for (const pair of pairs) {
    const colon = pair.lastIndexOf(':');
    if (colon <= 0 || colon === pair.length - 1)
      throw new UsageError(`--package '${pair}': write it as PACKAGE_ID:VERSION (e.g. Web.App:1.4.2)`);
    versions[pair.slice(0, colon)] = pair.slice(colon + 1);
  }
  return versions;
}

export function registerReleaseCreate(release: Command, io: Io): void {
  release
    .command('create')
    .description('Create a release of a project (freezes package versions, steps, variables)')
    .requiredOption('--project <name|id>', 'project')
    .requiredOption('--version <version>', 'release version (SemVer 2.0.0)')
    .option('--channel <name|id>', 'channel (default: the project’s default channel, if any)')
    .option('--ignore-default-channel', 'create without a channel even when the project has a default one')
    .option('--package <id:version>', 'package version to use (repeatable; default: the latest)', repeatable)
    .addOption(new Option('--notes <text>', 'release notes').conflicts('notesFile'))
    .option('--notes-file <file>', 'read the release notes from a file')
    .action(async (options: CreateOptions, command: Command) => {
      const { out, api, resolver } = contextOf(command, io);
      const packageVersions = parsePackageVersions(options.package ?? []);
      const notes =
        options.notesFile === undefined
          ? options.notes
          : await readFile(options.notesFile, 'utf8').catch(() => {
              throw new UsageError(`--notes-file: cannot read ${options.notesFile}`);
            });
      const project = await resolver.project(options.project);
      const create = (channelName: string | undefined) =>
        api.client.POST('/api/release', {
          body: {
            projectId: project.projectId,
            version: options.version,
            ...(channelName === undefined ? {} : { channelName }),
            ...(options.ignoreDefaultChannel ? { ignoreDefaultChannel: true } : {}),
            ...(notes === undefined ? {} : { notes }),
            ...(packageVersions === undefined ? {} : { packageVersions }),
          },
        });
      let created;
      try {
        created = unwrap(await create(options.channel));
      } catch (error) {
        if (options.channel === undefined || !refusedAsUnknown(error, 'channelName')) throw error;
        // Perhaps a channel ID: the API takes channels by name.
        const { channels } = unwrap(
          await api.client.GET('/api/project/channels', { params: { query: { projectId: project.projectId } } }),
        );
        const names = idsToNames(
          [options.channel],
          channels,
          (c) => c.channelId,
          (c) => c.name,
        );
        if (!names) throw error;
        created = unwrap(await create(names[0]));
      }
      out.result(
        { releaseId: created.releaseId, projectId: project.projectId, version: options.version },
        (value) => `Created release ${value.version} of ${project.name ?? value.projectId}: ${value.releaseId}\n`,
      );
    });
}
