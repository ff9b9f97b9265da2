/**
 * bench/fleet/run-task: the control plane's CPU to build one RunTask (what an agent is sent: the
 * step's script with variables resolved and substituted for its machine), for a release whose
 * project has V variables with two values each (every fifth Sensitive, so sealed in the snapshot),
 * built for T machines as one wide deployment's dispatch does. No database, no agents: the engine
 * function alone (services/engine/task-payload.ts), in this process.
 *
 *   npx tsx bench/fleet/run-task.ts                  (V = 0, 100, 500; T = 10,000)
 *   npx tsx bench/fleet/run-task.ts --variables 100 --tasks 2000
 */
import { parseArgs } from 'node:util';
import { createSecretBox, type ReleaseSnapshot } from '../../services/core/index.ts';
import { buildRunTask } from '../../services/engine/task-payload.ts';
import type { DeploymentTask, TargetMachine } from '../../services/store/index.ts';
import { snapshotOf, step } from '../../test/helpers/engine-fixtures.ts';
import { median, table } from '../deploy/stats.ts';

const { values } = parseArgs({
  options: { variables: { type: 'string', default: '0,100,500' }, tasks: { type: 'string', default: '10000' } },
});
const SIZES = values.variables.split(',').map(Number);
const TASKS = Number(values.tasks);
const ROUNDS = 5;
const secrets = createSecretBox(Buffer.alloc(32, 7));

function snapshotWith(variableCount: number): ReleaseSnapshot {
  const unscoped = { environmentsFilter: [], machineFilter: [], tagFilter: [], stepFilter: [], channelFilter: [] };
  const value = (i: number, text: string, environmentsFilter: string[]) =>
    i % 5 === 0
      ? { ...unscoped, environmentsFilter, value: null, valueEncrypted: secrets.encrypt(text) }
      : { ...unscoped, environmentsFilter, value: text, valueEncrypted: null };
  return snapshotOf({
    steps: [
      step('Deploy', {
        stepId: 's1',
        template: { ...step('Deploy').template, script: 'echo "#{Var1} #{Var5} #{CONTEXT.MachineName}"' },
      }),
    ],
    variables: Array.from({ length: variableCount }, (_, i) => ({
      variableId: `v${i}`,
      name: `Var${i}`,
      variableType: i % 5 === 0 ? ('Sensitive' as const) : ('Text' as const),
      source: 'project' as const,
      values: [value(i, `value ${i}`, []), value(i, `production value ${i}`, ['e1'])],
    })),
  });
}

const rows: string[][] = [];
for (const variableCount of SIZES) {
  const perTask: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // A new snapshot per round, as a new release is: nothing carried over from the round before.
    const snapshot = snapshotWith(variableCount);
    const started = performance.now();
    for (let i = 0; i < TASKS; i++) {
      const payload = buildRunTask({
        snapshot,
        release: { version: '1.0.0', notes: null },
        deployment: { id: 'd1', environmentId: 'e1', environmentName: 'Production', redownloadPackages: false },
        task: { id: `t${i}`, stepId: 's1' } as DeploymentTask,
        machine: { machineId: `m${i}`, name: `web-${i}`, tagIds: [] } as unknown as TargetMachine,
        secrets,
      });
      if (variableCount > 1 && !payload.script.includes('production value 1')) throw new Error('not resolved');
    }
    perTask.push(((performance.now() - started) / TASKS) * 1000);
  }
  const us = median(perTask);
  rows.push([String(variableCount), String(TASKS), `${us.toFixed(1)} µs`, `${((us * TASKS) / 1e6).toFixed(2)} s`]);
}
console.log(`\n## bench/fleet/run-task — building RunTasks in the engine, median of ${ROUNDS} rounds\n`);
console.log(table(['variables (2 values, 1 in 5 Sensitive)', 'tasks', 'CPU per RunTask', 'CPU per deployment'], rows));
