/** gantry package push FILE... [--if-exists fail|ignore] */
import { Option, type Command } from 'commander';
import type { Io } from '../context.ts';
import { contextOf } from '../context.ts';
import { formatBytes, renderTable } from '../output.ts';
import { pushPackage, type IfExists, type PushResult } from '../package-upload.ts';

export function registerPackagePush(packageCommand: Command, io: Io): void {
  packageCommand
    .command('push')
    .description('Upload package files (<PackageId>.<Version>.<zip|nupkg|tar|tar.gz>) to the package store')
    .argument('<files...>', 'package files')
    .addOption(
      new Option('--if-exists <action>', 'when the package ID and version are already stored')
        .choices(['fail', 'ignore'])
        .default('fail'),
    )
    .action(async (files: string[], options: { ifExists: IfExists }, command: Command) => {
      const { out, api, resolver } = contextOf(command, io);
      const { workspaceId } = await resolver.workspace();
      const packages: PushResult[] = [];
      for (const file of files) packages.push(await pushPackage(api, out, workspaceId, file, options.ifExists));
      out.result({ packages }, (value) =>
        renderTable(
          ['FILE', 'SIZE', 'UPLOAD', 'RESULT'],
          value.packages.map((p) => [p.fileName, formatBytes(p.sizeBytes), p.mode ?? '-', p.result]),
        ),
      );
    });
}
