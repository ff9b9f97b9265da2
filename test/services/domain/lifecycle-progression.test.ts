import { describe, expect, it } from 'vitest';
import type { SnapshotLifecycle, SnapshotPhase } from '../../../services/core/index.ts';
import {
  automaticEnvironmentsDue,
  computeProgression,
  type ProgressionDeployment,
} from '../../../services/domain/lifecycle-progression.ts';

const env = (id: string, enabled = true) => ({ environmentId: id, name: id.toUpperCase(), enabled });
const environments = [env('dev'), env('qa'), env('stage'), env('prod')];

function phase(name: string, sortOrder: number, ids: string[], extra: Partial<SnapshotPhase> = {}): SnapshotPhase {
  return {
    phaseId: `p-${name}`,
    name,
    sortOrder,
    progressRequirement: 'AllMustComplete',
    progressRequirementErrorMode: 'NoErrorsAllowWarnings',
    progressRequirementCount: 0,
    environments: ids.map((id) => ({ environmentId: id, environmentName: id.toUpperCase(), howToTrigger: 'Manual' })),
    ...extra,
  };
}

const lifecycle = (...phases: SnapshotPhase[]): SnapshotLifecycle => ({ lifecycleId: 'l', name: 'Life', phases });
const done = (environmentId: string, extra: Partial<ProgressionDeployment> = {}): ProgressionDeployment => ({
  environmentId,
  status: 'Completed',
  errorCount: 0,
  warningCount: 0,
  ...extra,
});
const available = (p: ReturnType<typeof computeProgression>) =>
  p.environments.filter((e) => e.available).map((e) => e.environmentId);

describe('computeProgression', () => {
  it('makes every enabled environment available when the release has no lifecycle', () => {
    const p = computeProgression(null, [...environments, env('off', false)], []);
    expect(available(p)).toEqual(['dev', 'qa', 'stage', 'prod']);
    expect(p.environments.find((e) => e.environmentId === 'off')!.reason).toContain('disabled');
  });

  it('opens only the first phase of a fresh release and names the blocking phase', () => {
    const p = computeProgression(
      lifecycle(phase('Test', 1, ['dev', 'qa']), phase('Prod', 2, ['prod'])),
      environments,
      [],
    );
    expect(available(p)).toEqual(['dev', 'qa']);
    const prod = p.environments.find((e) => e.environmentId === 'prod')!;
    expect(prod.reason).toBe("The release has not reached phase 'Prod': phase 'Test' is not complete");
    expect(p.environments.find((e) => e.environmentId === 'stage')!.reason).toContain('not in the lifecycle');
  });

  it('reaches the next phase only when every environment of AllMustComplete succeeded', () => {
    const l = lifecycle(phase('Test', 1, ['dev', 'qa']), phase('Prod', 2, ['prod']));
    expect(available(computeProgression(l, environments, [done('dev')]))).not.toContain('prod');
    expect(available(computeProgression(l, environments, [done('dev'), done('qa')]))).toContain('prod');
  });

  it('does not count failed, running or erroring deployments as complete', () => {
    const l = lifecycle(phase('Test', 1, ['dev']), phase('Prod', 2, ['prod']));
    for (const d of [
      done('dev', { status: 'Failed' }),
      done('dev', { status: 'Running' }),
      done('dev', { errorCount: 1 }),
    ]) {
      expect(available(computeProgression(l, environments, [d]))).not.toContain('prod');
    }
  });

  it('applies the error mode to warnings', () => {
    const strict = lifecycle(
      phase('Test', 1, ['dev'], { progressRequirementErrorMode: 'NoErrorsNoWarnings' }),
      phase('Prod', 2, ['prod']),
    );
    const lenient = lifecycle(phase('Test', 1, ['dev']), phase('Prod', 2, ['prod']));
    const warned = [done('dev', { warningCount: 2 })];
    expect(available(computeProgression(strict, environments, warned))).not.toContain('prod');
    expect(available(computeProgression(lenient, environments, warned))).toContain('prod');
  });

  it('counts MinimumNumberToComplete and skips OptionalPhase', () => {
    const minimum = lifecycle(
      phase('Test', 1, ['dev', 'qa', 'stage'], {
        progressRequirement: 'MinimumNumberToComplete',
        progressRequirementCount: 2,
      }),
      phase('Prod', 2, ['prod']),
    );
    expect(available(computeProgression(minimum, environments, [done('dev')]))).not.toContain('prod');
    expect(available(computeProgression(minimum, environments, [done('dev'), done('stage')]))).toContain('prod');
    const optional = lifecycle(
      phase('Test', 1, ['dev'], { progressRequirement: 'OptionalPhase' }),
      phase('Prod', 2, ['prod']),
    );
    expect(available(computeProgression(optional, environments, []))).toEqual(['dev', 'prod']);
  });

  it('takes phases in sortOrder whatever their array order', () => {
    const p = computeProgression(lifecycle(phase('Prod', 2, ['prod']), phase('Test', 1, ['dev'])), environments, []);
    expect(available(p)).toEqual(['dev']);
    expect(p.phases!.map((x) => x.name)).toEqual(['Test', 'Prod']);
  });

  it('keeps a disabled environment of a reached phase unavailable, saying why', () => {
    const p = computeProgression(lifecycle(phase('Test', 1, ['dev'])), [env('dev', false)], []);
    expect(p.environments[0]).toMatchObject({ available: false, reason: "Environment 'DEV' is disabled" });
  });
});

describe('automaticEnvironmentsDue', () => {
  it('lists automatic environments of reached phases without a deployment yet', () => {
    const auto = (p: SnapshotPhase) => ({
      ...p,
      environments: p.environments.map((e) => ({ ...e, howToTrigger: 'Automatic' as const })),
    });
    const l = lifecycle(auto(phase('Test', 1, ['dev'])), auto(phase('Prod', 2, ['prod'])));
    expect(automaticEnvironmentsDue(computeProgression(l, environments, []), [])).toEqual(['dev']);
    const deployments = [done('dev')];
    expect(automaticEnvironmentsDue(computeProgression(l, environments, deployments), ['dev'])).toEqual(['prod']);
    const both = [done('dev'), { ...done('prod'), status: 'Running' }];
    // Prod was deployed to (still running): not due again.
    expect(automaticEnvironmentsDue(computeProgression(l, environments, both), ['dev', 'prod'])).toEqual([]);
  });
});
