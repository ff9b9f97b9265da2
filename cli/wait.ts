/**
 * Waits for deployments to end, as `deploy --wait`, `promote --wait` and `deployment wait` do:
 * streams their lines (with --progress), reports status changes, enforces --timeout (and with
 * --cancel-on-timeout cancels what still runs and waits for it to end), and when a deployment
 * fails ends with the last lines of the step × machine that failed. The exit code says which of
 * these happened (exit-codes.ts).
 */
import { unwrap } from '../client/index.ts';
import type { Api } from './api.ts';
import { followDeployment } from './deployment-stream.ts';
import { isFinal, type DeploymentStatus } from './deployment-types.ts';
import { formatDuration } from './duration.ts';
import { ExitCode, ExitWith } from './exit-codes.ts';
import { LogLines } from './log-lines.ts';
import { renderTable, type Output } from './output.ts';

export interface WaitOptions {
  /** Print every log line as it arrives (--progress). */
  progress: boolean;
  timeoutMs: number | null;
  cancelOnTimeout: boolean;
  reconnectBudgetMs: number;
}

/** One deployment as the JSON output shows it (cli/README.md). */
export interface DeploymentResult {
  deploymentId: string;
  environmentName: string | null;
  status: string | null;
  errorCount: number | null;
  warningCount: number | null;
  completedUtc: string | null;
}

export type WaitOutcome = 'Completed' | 'Failed' | 'Cancelled' | 'TimedOut';

export interface WaitResult {
  outcome: WaitOutcome;
  deployments: DeploymentResult[];
}

/** How long --cancel-on-timeout waits for the cancelled deployments to end. */
const CANCEL_GRACE_MS = 60_000;
/**
 * How often a Queued or AwaitingSlot deployment's waitingReason is read (GET /api/deployment
 * without logs): the event stream carries the spec's status object only, and the reasons of a
 * queue or slot wait are not in the log.
 */
const REASON_POLL_MS = 1_000;

interface Watched {
  id: string;
  lines: LogLines;
  status: DeploymentStatus | null;
  afterTick: string | null;
}

const shortId = (id: string) => id.slice(0, 8);

export async function waitForDeployments(
  api: Api,
  out: Output,
  deploymentIds: string[],
  options: WaitOptions,
): Promise<WaitResult> {
  const watched: Watched[] = deploymentIds.map((id) => ({ id, lines: new LogLines(), status: null, afterTick: null }));
  const several = watched.length > 1;
  const label = (w: Watched) => w.lines.environmentName ?? shortId(w.id);

  const follow = (w: Watched, signal: AbortSignal) =>
    followDeployment(api, w.id, {
      signal,
      afterTick: w.afterTick,
      reconnectBudgetMs: options.reconnectBudgetMs,
      // Named by its environment from the first status note on, not by its id until a line says it.
      onDeployment: (deployment) => {
        w.lines.environmentName ??= deployment.environmentName;
      },
      onLogs: (items) => {
        for (const item of items) {
          const line = w.lines.add(item);
          w.afterTick = item.CreatedUtcTick;
          if (options.progress)
            out.logLine(several ? `${label(w)} ${line.prefix}`.trim() : line.prefix, line.text, line.level);
        }
      },
      onStatus: (status) => {
        const changed = w.status?.Status !== status.Status;
        w.status = status;
        if (changed) out.note(`Deployment ${label(w)}: ${status.Status}`, styleOf(status.Status));
      },
    });

  // Why a deployment waits, on stderr whenever it changes (issue #15): "Waiting: awaiting approval (1 of 2)".
  const reasons = new Map<string, string | null>();
  const watchReasons = async (list: Watched[], signal: AbortSignal): Promise<void> => {
    while (!signal.aborted) {
      for (const w of list) {
        // Read only once the stream said it waits (its first status comes at once).
        if (w.status === null || (w.status.Status !== 'Queued' && w.status.Status !== 'AwaitingSlot')) continue;
        const read = await api.client.GET('/api/deployment', {
          params: { query: { deploymentId: w.id, skipLogs: true } },
          signal,
        });
        // A failed read is left to the log stream, which reports it; the reason is only a hint.
        // Its environment too: no log line names it until the deployment starts.
        w.lines.environmentName ??= read.data?.environmentName ?? null;
        const reason = read.data?.waitingReason ?? null;
        if (reason !== null && reasons.get(w.id) !== reason)
          out.note(`${several ? `${label(w)}: ` : ''}Waiting: ${reason}`);
        reasons.set(w.id, reason);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, REASON_POLL_MS);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  };

  const followAll = async (list: Watched[], limitMs: number | null): Promise<boolean> => {
    const controller = new AbortController();
    const timer = limitMs === null ? null : setTimeout(() => controller.abort(new Error('timeout')), limitMs);
    const stopReasons = new AbortController();
    const reasonsWatched = watchReasons(list, AbortSignal.any([controller.signal, stopReasons.signal])).catch(
      () => undefined,
    );
    try {
      await Promise.all(list.map((w) => follow(w, controller.signal)));
      return true;
    } catch (error) {
      if (controller.signal.aborted) return false;
      controller.abort(error);
      throw error;
    } finally {
      if (timer) clearTimeout(timer);
      stopReasons.abort();
      await reasonsWatched;
    }
  };

  const finished = await followAll(watched, options.timeoutMs);
  let timedOut = false;
  if (!finished) {
    timedOut = true;
    const running = watched.filter((w) => !isFinal(w.status));
    out.error(
      `Timed out after ${formatDuration(options.timeoutMs ?? 0)}: ${running.map(label).join(', ')} still ${running.map((w) => w.status?.Status ?? 'Queued').join(', ')}`,
    );
    if (options.cancelOnTimeout) {
      for (const w of running) {
        const cancelled = await api.client.POST('/api/deployment/cancel', { body: { deploymentId: w.id } });
        // 400 here means it ended meanwhile: following it shows how.
        if (cancelled.response.status !== 400) unwrap(cancelled);
        out.note(`Cancellation requested for ${label(w)}`);
      }
      if (!(await followAll(running, CANCEL_GRACE_MS)))
        out.error(`The cancelled deployments did not end within ${formatDuration(CANCEL_GRACE_MS)}`);
    } else {
      out.note('They go on running; to cancel:');
      for (const w of running) out.note(`  gantry deployment cancel ${w.id}`);
      // One that waits for approval goes on only when an account other than the requester approves.
      const unapproved = running.filter((w) => reasons.get(w.id)?.startsWith('awaiting approval'));
      if (unapproved.length > 0) out.note('To approve (an account other than the one that requested it):');
      for (const w of unapproved) out.note(`  gantry deployment approve ${w.id}`);
    }
  }

  for (const w of watched.filter((w) => w.status?.Status === 'Failed')) await showFailure(api, out, w, label(w));
  for (const w of watched.filter((w) => w.status?.Status === 'Completed' && w.status.ErrorCount > 0))
    out.warn(`Deployment ${label(w)} completed with ${w.status!.ErrorCount} error(s) (steps set to continue on error)`);

  const statuses = watched.map((w) => w.status?.Status);
  const outcome: WaitOutcome = timedOut
    ? 'TimedOut'
    : statuses.includes('Failed')
      ? 'Failed'
      : statuses.includes('Cancelled')
        ? 'Cancelled'
        : 'Completed';
  return {
    outcome,
    deployments: watched.map((w) => ({
      deploymentId: w.id,
      environmentName: w.lines.environmentName,
      status: w.status?.Status ?? null,
      errorCount: w.status?.ErrorCount ?? null,
      warningCount: w.status?.WarningCount ?? null,
      completedUtc: w.status?.CompleteDate ?? null,
    })),
  };
}

function styleOf(status: string) {
  return status === 'Completed' ? 'green' : status === 'Failed' ? 'red' : status === 'Cancelled' ? 'yellow' : undefined;
}

/** The failed step × machine targets and the last lines each wrote (stderr). */
async function showFailure(api: Api, out: Output, w: Watched, label: string): Promise<void> {
  const targets = unwrap(
    await api.client.GET('/api/deployment/targets', { params: { query: { deploymentId: w.id } } }),
  );
  const failed = targets.steps.flatMap((step) =>
    step.targets.filter((t) => t.status === 'Failed').map((t) => ({ step: step.name, target: t })),
  );
  out.error(`Deployment ${label} failed`);
  if (failed.length === 0) for (const item of w.lines.errors) out.logLine('', item.Data, 'Error');
  for (const { step, target } of failed) {
    const machine = target.machineName ?? '(no machine)';
    out.error(
      `--- ${step} on ${machine} failed${target.exitCode === null ? '' : ` (exit code ${target.exitCode})`}; its last lines:`,
    );
    for (const item of w.lines.tail(step, target.machineName))
      out.logLine(`[${step} @ ${machine}]`, item.Data, 'Error');
  }
}

/** The exit code for an outcome (0 Completed, 1 Failed, 3 TimedOut, 4 Cancelled). */
export function exitCodeOfOutcome(outcome: WaitOutcome): ExitCode {
  switch (outcome) {
    case 'Completed':
      return ExitCode.Success;
    case 'Failed':
      return ExitCode.DeploymentFailed;
    case 'TimedOut':
      return ExitCode.TimedOut;
    case 'Cancelled':
      return ExitCode.Cancelled;
  }
}

export function throwUnlessCompleted(result: WaitResult): void {
  const code = exitCodeOfOutcome(result.outcome);
  if (code !== ExitCode.Success) throw new ExitWith(code, result.outcome);
}

/** The deployments as the text result shows them. */
export function renderDeployments(deployments: DeploymentResult[]): string {
  return renderTable(
    ['DEPLOYMENT', 'ENVIRONMENT', 'STATUS', 'ERRORS', 'WARNINGS'],
    deployments.map((d) => [
      d.deploymentId,
      d.environmentName ?? '-',
      d.status ?? '-',
      String(d.errorCount ?? '-'),
      String(d.warningCount ?? '-'),
    ]),
  );
}
