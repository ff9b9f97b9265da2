// What an agent is sent for one task: variables resolved for that machine, Sensitive values
// decrypted once per release snapshot rather than once per task (a 10,000-machine dispatch).
import { describe, expect, it } from 'vitest';
import { createSecretBox, type ReleaseSnapshot, type SecretBox } from '../../../services/core/index.ts';
import { buildRunTask } from '../../../services/engine/task-payload.ts';
import type { DeploymentTask, TargetMachine } from '../../../services/store/index.ts';
import { snapshotOf, step } from '../../helpers/engine-fixtures.ts';

const box = createSecretBox(Buffer.alloc(32, 9));

/** The box, counting what it decrypts. */
function countingBox(): SecretBox & { decrypted: number } {
  const counting = {
    decrypted: 0,
    encrypt: (plain: string) => box.encrypt(plain),
    decrypt: (sealed: string) => {
      counting.decrypted++;
      return box.decrypt(sealed);
    },
  };
  return counting;
}

const unscoped = { environmentsFilter: [], machineFilter: [], tagFilter: [], stepFilter: [], channelFilter: [] };

function snapshotWith(secret: string): ReleaseSnapshot {
  return snapshotOf({
    steps: [
      step('Deploy', {
        stepId: 's1',
        template: { ...step('Deploy').template, script: 'echo #{Greeting} #{Password}' },
      }),
    ],
    variables: [
      {
        variableId: 'v1',
        name: 'Password',
        variableType: 'Sensitive',
        source: 'project',
        values: [{ ...unscoped, value: null, valueEncrypted: box.encrypt(secret) }],
      },
      {
        variableId: 'v2',
        name: 'Greeting',
        variableType: 'Text',
        source: 'project',
        values: [
          { ...unscoped, value: 'hello', valueEncrypted: null },
          { ...unscoped, machineFilter: ['m2'], value: 'hi m2', valueEncrypted: null },
        ],
      },
    ],
  });
}

function taskFor(snapshot: ReleaseSnapshot, machineId: string, secrets: SecretBox) {
  return buildRunTask({
    snapshot,
    release: { version: '1.0.0', notes: null },
    deployment: { id: 'd1', environmentId: 'e1', environmentName: 'Production', redownloadPackages: false },
    task: { id: `t-${machineId}`, stepId: 's1' } as DeploymentTask,
    machine: { machineId, name: machineId, tagIds: [] } as unknown as TargetMachine,
    secrets,
  });
}

describe('buildRunTask', () => {
  it('decrypts a snapshot’s Sensitive values once, however many tasks it dispatches', () => {
    const secrets = countingBox();
    const snapshot = snapshotWith('s3cret');
    const tasks = ['m1', 'm2', 'm3', 'm4'].map((m) => taskFor(snapshot, m, secrets));
    expect(secrets.decrypted).toBe(1);
    // Still resolved per machine: m2 has its own Greeting.
    expect(tasks.map((t) => t.script)).toEqual([
      'echo hello s3cret',
      'echo hi m2 s3cret',
      'echo hello s3cret',
      'echo hello s3cret',
    ]);
    expect(tasks.every((t) => t.sensitiveValues.includes('s3cret'))).toBe(true);
  });

  it('decrypts again for another snapshot: releases never share values', () => {
    const secrets = countingBox();
    expect(taskFor(snapshotWith('first'), 'm1', secrets).script).toBe('echo hello first');
    expect(taskFor(snapshotWith('second'), 'm1', secrets).script).toBe('echo hello second');
    expect(secrets.decrypted).toBe(2);
  });

  describe('#{CONTEXT.PackageFolder}', () => {
    const script = 'cd "#{CONTEXT.PackageFolder}" && ./run.sh #{Target} ##{CONTEXT.PackageFolder}';
    const target = {
      variableId: 'v1',
      name: 'Target',
      variableType: 'Text' as const,
      source: 'project' as const,
      values: [{ ...unscoped, value: '#{CONTEXT.PackageFolder}/bin', valueEncrypted: null }],
    };
    function snapshotUsing(packageIds: string[]): ReleaseSnapshot {
      const snapshot = snapshotOf({
        steps: [step('Deploy', { stepId: 's1', packageIds, template: { ...step('Deploy').template, script } })],
        variables: [target],
      });
      return {
        ...snapshot,
        packages: [
          { packageId: 'Web.App', version: '1.4.2', sha256: 'ab', sizeBytes: 130, type: 'zip' },
          { packageId: 'Other', version: '2.0.0', sha256: 'cd', sizeBytes: 10, type: 'zip' },
        ],
      };
    }

    it('stands for a token of the task the agent replaces with its folder, in the script and variables', () => {
      const task = taskFor(snapshotUsing(['Web.App']), 'm1', box);
      const token = '#{CONTEXT.PackageFolder:t-m1}';
      expect(task.packageFolderToken).toBe(token);
      // The escaped reference stays literal text: the agent replaces only the token.
      expect(task.script).toBe(`cd "${token}" && ./run.sh ${token}/bin #{CONTEXT.PackageFolder}`);
      expect(task.env.Target).toBe(`${token}/bin`);
      expect(task.env.Gantry_PackageFolder).toBe(token);
      expect(task.packages.map((p) => p.packageId)).toEqual(['Web.App']);
    });

    it('is empty for a step without packages (no token)', () => {
      const task = taskFor(snapshotUsing([]), 'm1', box);
      expect(task.packageFolderToken).toBe('');
      expect(task.script).toBe('cd "" && ./run.sh /bin #{CONTEXT.PackageFolder}');
      expect(task.env.Target).toBe('/bin');
      expect(task.packages).toEqual([]);
    });
  });
});
