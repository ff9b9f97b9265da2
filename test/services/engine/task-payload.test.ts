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
});
