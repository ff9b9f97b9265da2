/**
 * Warnings written when a deployment is planned, for steps that would run and "succeed" having
 * done nothing: a package property left empty (no package, no PackageFolder), or a script or
 * property naming a system value without `CONTEXT.` (`#{PackageFolder}`) or by Octopus's name
 * (`#{Octopus.Release.Number}`, a script brought over from it), which is left as written and
 * which a shell reads as a comment.
 */
import type { ReleaseSnapshot } from '../core/index.ts';
import { misnamedSystemReferences, packageSelections } from '../domain/index.ts';
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
    // A package property left empty: the step runs with no package (no PackageFolder) and would
    // "succeed" having deployed nothing.
    for (const { property, packageId } of packageSelections(step.template, step.properties)) {
      if (packageId !== '') continue;
      lines.push({
        level: 'Warning',
        data: `Step '${step.name}': its package property '${property.Name || property.Id}' is empty, so it runs without a package`,
        stepId: step.stepId,
      });
    }
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
