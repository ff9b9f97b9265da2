/**
 * Turns a deployment's flat log (api-spec §2.3) into lines prefixed by step and machine. The
 * server writes one parent entry per step ("Step 'X'", id `<deployment>.<step>`) and one per step
 * × machine ("Running 'X' on M", its id is the target's), and the script's lines point at the
 * latter through ParentLogId (contract §5). The last lines of each step × machine are kept, so a
 * failed deployment can end by showing them.
 */
import type { LogItem } from './deployment-types.ts';

const TAIL_LINES = 20;

interface Target {
  step: string;
  machine: string;
  tail: LogItem[];
}

export interface PrefixedLine {
  prefix: string;
  text: string;
  level: string;
}

export class LogLines {
  /** Environment of the deployment, from its "Deploying release to 'X'" line. */
  environmentName: string | null = null;
  readonly #steps = new Map<string, string>();
  readonly #stepEntries = new Set<string>();
  readonly #targets = new Map<string, Target>();
  /** The last error lines of the deployment (a failure before any step ran has no target to show). */
  readonly errors: LogItem[] = [];

  add(item: LogItem): PrefixedLine {
    const text = item.Data;
    if (item.LogLevel === 'Error' || item.LogLevel === 'Critical') {
      this.errors.push(item);
      if (this.errors.length > TAIL_LINES) this.errors.shift();
    }
    if (item.StepId === null && item.ParentLogId === null) {
      const environment = /^Deploying release to '(.*)'$/.exec(text);
      if (environment) this.environmentName = environment[1]!;
      return { prefix: '', text, level: item.LogLevel };
    }
    const stepHeader = item.ParentLogId === null ? /^Step '(.*)'$/.exec(text) : null;
    if (stepHeader && item.StepId !== null) {
      this.#steps.set(item.StepId, stepHeader[1]!);
      this.#stepEntries.add(item.Id);
      return { prefix: `[${stepHeader[1]}]`, text, level: item.LogLevel };
    }
    const target = item.ParentLogId === null ? undefined : this.#targets.get(item.ParentLogId);
    if (target) {
      target.tail.push(item);
      if (target.tail.length > TAIL_LINES) target.tail.shift();
      return { prefix: `[${target.step} @ ${target.machine}]`, text, level: item.LogLevel };
    }
    const step = item.StepId === null ? undefined : this.#steps.get(item.StepId);
    const running = this.#parseRunning(text, step);
    if (running && item.ParentLogId !== null) {
      const created: Target = { ...running, tail: [] };
      this.#targets.set(item.Id, created);
      return { prefix: `[${running.step} @ ${running.machine}]`, text, level: item.LogLevel };
    }
    return { prefix: step ? `[${step}]` : '', text, level: item.LogLevel };
  }

  /** The last lines the script of `step` wrote on `machine` (and the line saying how it ended). */
  tail(step: string, machine: string | null): LogItem[] {
    for (const target of this.#targets.values())
      if (target.step === step && (machine === null || target.machine === machine)) return target.tail;
    return [];
  }

  #parseRunning(text: string, step: string | undefined): { step: string; machine: string } | null {
    if (step !== undefined) {
      const head = `Running '${step}' on `;
      return text.startsWith(head) ? { step, machine: text.slice(head.length) } : null;
    }
    const match = /^Running '(.*)' on (.+)$/.exec(text);
    return match ? { step: match[1]!, machine: match[2]! } : null;
  }
}
