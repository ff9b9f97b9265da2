/**
 * bench/fleet/scheduler: the engine's CPU to schedule one wide rolling deployment, in this process
 * (no database, no agents): the IncrementalScheduler the orchestrator keeps per deployment
 * (services/engine/scheduler.ts), built for N machines in one rolling group with window W, then
 * driven to the end as the fleet bench's agents drive it — each refill ends the R oldest running
 * targets and asks what starts next. Prints the first decision (what the first dispatch waits
 * for) and the whole run, median of 5 rounds after a warm-up; checks every machine ran once.
 *
 *   npx tsx bench/fleet/scheduler.ts                      (N = 500, 2,000, 10,000; W = 500; R = 60)
 *   npx tsx bench/fleet/scheduler.ts --n 10000 --window 100 --refill 10
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { TaskStatus } from '../../services/core/index.ts';
import { targetKey, type Plan } from '../../services/engine/plan-types.ts';
import { IncrementalScheduler } from '../../services/engine/scheduler.ts';
import { group, machine, plan, step } from '../../test/helpers/plan-input.ts';
import { median, table } from '../deploy/stats.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '500,2000,10000' },
    window: { type: 'string', default: '500' },
    refill: { type: 'string', default: '60' },
  },
});
const SIZES = values.n.split(',').map(Number);
const WINDOW = Number(values.window);
/** Targets ended between two refills (default 60: a refill every 30 ms at the goal's 2,000 tasks/s). */
const REFILL = Number(values.refill);
const ROUNDS = 5;

function rollingPlan(n: number): Plan {
  return plan({
    steps: [step('deploy', { name: 'Deploy', rollingGroupId: 'fleet' })],
    rollingGroups: [group('fleet', { name: 'Fleet', windowSize: WINDOW })],
    machines: Array.from({ length: n }, (_, i) =>
      machine(`sim-${String(i).padStart(5, '0')}`, [], {
        machineId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      }),
    ),
    organization: { maxParallelMachines: WINDOW },
  });
}

/** One deployment: ms to the first decision, ms in all, and how many times each machine started. */
function drive(plan: Plan): { firstMs: number; totalMs: number; starts: Map<string, number> } {
  const starts = new Map<string, number>();
  const began = performance.now();
  const statuses = new Map<string, TaskStatus>();
  for (const stage of plan.stages)
    if (stage.kind === 'RollingGroup')
      for (const m of stage.machines)
        for (const s of m.stepIds) statuses.set(targetKey(s, m.machineId), TaskStatus.Pending);
  const scheduler = new IncrementalScheduler(plan, statuses);
  let answer = scheduler.next();
  const firstMs = performance.now() - began;
  const running: Array<{ stepId: string; machineId: string }> = [];
  for (;;) {
    for (const s of answer.start) {
      scheduler.set(s.stepId, s.machineId, TaskStatus.Running);
      running.push(s);
      starts.set(s.machineId, (starts.get(s.machineId) ?? 0) + 1);
    }
    if (answer.deploymentOutcome) break;
    if (running.length === 0) throw new Error('nothing runs and the deployment is not over');
    for (const s of running.splice(0, REFILL)) scheduler.set(s.stepId, s.machineId, TaskStatus.Succeeded);
    answer = scheduler.next();
  }
  return { firstMs, totalMs: performance.now() - began, starts };
}

const rows: string[][] = [];
for (const n of SIZES) {
  const plan = rollingPlan(n);
  drive(plan); // warm-up: JIT
  const first: number[] = [];
  const total: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const run = drive(plan);
    if (run.starts.size !== n || [...run.starts.values()].some((count) => count !== 1))
      throw new Error(`N = ${n}: ${run.starts.size} machines started, not each exactly once`);
    first.push(run.firstMs);
    total.push(run.totalMs);
  }
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  rows.push([String(n), ms(median(first)), ms(median(total)), `${((median(total) * 1000) / n).toFixed(1)} µs`, '✓']);
}
console.log(
  `\nbench/fleet/scheduler: one rolling group, window ${WINDOW}, ${REFILL} ends per refill; median of ${ROUNDS} rounds\n`,
);
console.log(table(['N', 'first decision', 'whole deployment', 'per machine', 'every machine started once'], rows));
