/**
 * Where a release stands on its lifecycle (contract §5), as a pure function: which phases are
 * reached and complete, and which environments are available for deployment — and why not.
 * Deploy, promote, release details and automatic deployments all ask this one function.
 */
import type { SnapshotLifecycle, SnapshotPhase } from '../core/index.ts';

export interface ProgressionEnvironment {
  environmentId: string;
  name: string;
  enabled: boolean;
}

export interface ProgressionDeployment {
  environmentId: string;
  status: string;
  errorCount: number;
  warningCount: number;
}

export interface EnvironmentAvailability {
  environmentId: string;
  environmentName: string;
  available: boolean;
  /** Why the environment is unavailable; null when available. */
  reason: string | null;
  howToTrigger: 'Automatic' | 'Manual' | null;
  /** True once a deployment of the release to it completed within the phase's error mode. */
  complete: boolean;
}

export interface PhaseProgress {
  phaseId: string;
  name: string;
  sortOrder: number;
  reached: boolean;
  complete: boolean;
  environments: EnvironmentAvailability[];
}

export interface Progression {
  /** null when the release has no lifecycle: every enabled environment is available. */
  phases: PhaseProgress[] | null;
  environments: EnvironmentAvailability[];
}

function succeeded(phase: SnapshotPhase, deployments: ProgressionDeployment[], environmentId: string): boolean {
  return deployments.some(
    (d) =>
      d.environmentId === environmentId &&
      d.status === 'Completed' &&
      d.errorCount === 0 &&
      (phase.progressRequirementErrorMode === 'NoErrorsAllowWarnings' || d.warningCount === 0),
  );
}

function isComplete(phase: SnapshotPhase, deployments: ProgressionDeployment[]): boolean {
  const done = phase.environments.filter((e) => succeeded(phase, deployments, e.environmentId)).length;
  switch (phase.progressRequirement) {
    case 'OptionalPhase':
      return true;
    case 'MinimumNumberToComplete':
      return done >= Math.min(phase.progressRequirementCount, phase.environments.length);
    case 'AllMustComplete':
      return done === phase.environments.length;
  }
}

export function computeProgression(
  lifecycle: SnapshotLifecycle | null,
  environments: ProgressionEnvironment[],
  deployments: ProgressionDeployment[],
): Progression {
  const byId = new Map(environments.map((e) => [e.environmentId, e]));
  const disabledReason = (name: string) => `Environment '${name}' is disabled`;

  if (!lifecycle) {
    return {
      phases: null,
      environments: environments.map((e) => ({
        environmentId: e.environmentId,
        environmentName: e.name,
        available: e.enabled,
        reason: e.enabled ? null : disabledReason(e.name),
        howToTrigger: null,
        complete: deployments.some(
          (d) => d.environmentId === e.environmentId && d.status === 'Completed' && d.errorCount === 0,
        ),
      })),
    };
  }

  const phases = [...lifecycle.phases].sort((a, b) => a.sortOrder - b.sortOrder);
  const progress: PhaseProgress[] = [];
  let blocker: string | null = null;
  for (const phase of phases) {
    const reached = blocker === null;
    const complete = isComplete(phase, deployments);
    progress.push({
      phaseId: phase.phaseId,
      name: phase.name,
      sortOrder: phase.sortOrder,
      reached,
      complete,
      environments: phase.environments.map((pe) => {
        const environment = byId.get(pe.environmentId);
        const name = environment?.name ?? pe.environmentName;
        const enabled = environment?.enabled ?? false;
        let reason: string | null = null;
        if (!environment) reason = `Environment '${name}' no longer exists`;
        else if (!enabled) reason = disabledReason(name);
        else if (!reached)
          reason = `The release has not reached phase '${phase.name}': phase '${blocker}' is not complete`;
        return {
          environmentId: pe.environmentId,
          environmentName: name,
          available: reason === null,
          reason,
          howToTrigger: pe.howToTrigger,
          complete: succeeded(phase, deployments, pe.environmentId),
        };
      }),
    });
    if (reached && !complete && blocker === null) blocker = phase.name;
  }

  const inLifecycle = new Map(progress.flatMap((p) => p.environments.map((e) => [e.environmentId, e] as const)));
  // An environment in several phases is available as soon as any of its phases is reached.
  for (const phase of progress) {
    for (const environment of phase.environments) {
      const known = inLifecycle.get(environment.environmentId)!;
      if (!known.available && environment.available) inLifecycle.set(environment.environmentId, environment);
    }
  }
  return {
    phases: progress,
    environments: environments.map(
      (e) =>
        inLifecycle.get(e.environmentId) ?? {
          environmentId: e.environmentId,
          environmentName: e.name,
          available: false,
          reason: `Environment '${e.name}' is not in the lifecycle '${lifecycle.name}'`,
          howToTrigger: null,
          complete: false,
        },
    ),
  };
}

/** Automatic environments of reached phases that have no deployment of the release yet. */
export function automaticEnvironmentsDue(
  progression: Progression,
  deployedEnvironmentIds: readonly string[],
): string[] {
  const deployed = new Set(deployedEnvironmentIds);
  if (!progression.phases) return [];
  return progression.phases
    .filter((p) => p.reached)
    .flatMap((p) => p.environments)
    .filter((e) => e.available && e.howToTrigger === 'Automatic' && !deployed.has(e.environmentId))
    .map((e) => e.environmentId);
}
