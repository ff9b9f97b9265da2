/**
 * Warnings written when a deployment is planned: a step whose script or properties name a system
 * value without `CONTEXT.` (`#{PackageFolder}`), or by Octopus's name (`#{Octopus.Release.Number}`,
 * a script brought over from it), would run with the reference left as written,
 * which a shell reads as a comment, and the step "succeeds" having done nothing.
 */
import type { ReleaseSnapshot } from '../core/index.ts';
import { misnamedSystemReferences } from '../domain/index.ts';
import type { NewLogEntry } from '../store/index.ts';
import type { Plan } from './plan-types.ts';
import { fullScript } from './task-payload.ts';

/** The IDs of the steps the plan runs (not skipped as a whole). */
function runningStepIds(plan: Plan): Set<string> {
  const ids = new Set<string>();
  for (const stage of plan.stages) {
    if (stage.kind === 'Step') {
      if (!stage.skip) ids.add(stage.stepId);
    } else for (const member of stage.members) if (!member.skip) ids.add(member.stepId);
  }
  return ids;
}

export function referenceHintLines(snapshot: ReleaseSnapshot, plan: Plan): NewLogEntry[] {
  const running = runningStepIds(plan);
  const variableNames = new Set(snapshot.variables.map((v) => v.name.toLowerCase()));
  const lines: NewLogEntry[] = [];
  for (const step of snapshot.steps) {
    if (!running.has(step.stepId)) continue;
    const text = [fullScript(snapshot, step), ...Object.values(step.properties)].join('\n');
    for (const { written, system } of misnamedSystemReferences(text, variableNames)) {
      lines.push({
        level: 'Warning',
        data: `Step '${step.name}': #{${written}} is left as written, since no variable has that name; the system value is #{CONTEXT.${system}}`,
        stepId: step.stepId,
      });
    }
  }
  return lines;
}
