/**
 * Steps × machines: each step with its targets, rolling-group members with the window each
 * machine ran in. The first step that failed is opened by itself; so are the ones running.
 */
import type { Answer } from '../api/client.ts';
import { StatusBadge } from '../components/status-badge.tsx';
import { TimeAgo } from '../components/time-ago.tsx';

type Step = Answer<'/api/dashboard/deployment'>['steps'][number];

function stepStatus(step: Step): string {
  const statuses = step.targets.map((t) => t.status);
  if (statuses.length === 0) return 'Skipped';
  for (const s of ['Failed', 'Running', 'Cancelled', 'Pending']) if (statuses.includes(s)) return s;
  return statuses.every((s) => s === 'Skipped') ? 'Skipped' : 'Succeeded';
}

export function StepTree({ steps }: { steps: Step[] }) {
  const firstFailed = steps.findIndex((s) => s.targets.some((t) => t.status === 'Failed'));
  return (
    <section aria-label="Steps">
      <h2>Steps and machines</h2>
      {steps.length === 0 && <p className="muted">The release has no steps.</p>}
      {steps.map((step, index) => {
        const status = stepStatus(step);
        return (
          <details key={step.stepId} className="step" open={index === firstFailed || status === 'Running'}>
            <summary>
              <StatusBadge status={status} /> <strong>{step.name}</strong>
              {step.rollingGroup && (
                <span className="small muted">
                  {' '}
                  · rolling group {step.rollingGroup.name}, window of {step.rollingGroup.windowSize}
                </span>
              )}
            </summary>
            {step.targets.length === 0 ? (
              <p className="muted small">No machine matched this step.</p>
            ) : (
              <table className="targets">
                <thead>
                  <tr>
                    <th scope="col">Machine</th>
                    {step.rollingGroup && <th scope="col">Window</th>}
                    <th scope="col">Status</th>
                    <th scope="col">Started</th>
                    <th scope="col">Result</th>
                  </tr>
                </thead>
                <tbody>
                  {step.targets.map((t) => (
                    <tr key={t.taskId}>
                      <td>{t.machineName ?? '—'}</td>
                      {step.rollingGroup && <td>{t.window ?? '—'}</td>}
                      <td>
                        <StatusBadge status={t.status} />
                      </td>
                      <td>
                        <TimeAgo iso={t.startedUtc} />
                      </td>
                      <td className="small">{t.message ?? (t.exitCode !== null ? `exit code ${t.exitCode}` : '')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </details>
        );
      })}
    </section>
  );
}
