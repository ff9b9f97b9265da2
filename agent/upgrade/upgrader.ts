/**
 * Carries out an UpgradeAgent: accept no new task, let the running ones finish, and meanwhile
 * download, check and self-test the new release; then swap it in and exit for the supervisor to
 * start it. Any failure resumes taking tasks with the old agent and reports why (UpgradeStatus).
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { UpgradeAgent, UpgradeStatus } from '../connection/index.ts';
import { installLayout, prepareRelease, swapTo, UpgradeError, type InstallLayout } from './self-upgrade.ts';

export interface UpgradeTasks {
  /** Stop accepting RunTask (they are left unanswered: the control plane sends them again). */
  pauseTasks(): void;
  resumeTasks(): void;
  /** Resolves once no task is running. */
  idle(): Promise<void>;
}

export interface UpgradeLink {
  /** Sends when connected; false otherwise. */
  trySend(message: { upgradeStatus: UpgradeStatus }): boolean;
  downloadAgentBundle(version: string, signal: AbortSignal): Readable;
  /** Ends the session gracefully; the agent reconnects (and is sent the tasks it left unanswered). */
  endSession(): void;
}

export interface AgentUpgraderOptions {
  readonly currentVersion: string;
  /** process.argv[1]: how the supervisor started this agent (install.sh's `current` link). */
  readonly scriptPath: string | undefined;
  /** process.execPath. */
  readonly node: string;
  readonly tasks: UpgradeTasks;
  readonly link: () => UpgradeLink | undefined;
  /** Stops the agent as SIGTERM does and exits 0, for the supervisor to start the new release. */
  readonly restart: () => void;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

export class AgentUpgrader {
  readonly #options: AgentUpgraderOptions;
  #busy = false;
  /** A report not sent yet (no session): sent at the next Welcome. */
  #unsent: UpgradeStatus | null = null;

  constructor(options: AgentUpgraderOptions) {
    this.#options = options;
  }

  /** A session was welcomed: a report kept while offline goes now. */
  onWelcome(): void {
    if (this.#unsent && this.#options.link()?.trySend({ upgradeStatus: this.#unsent })) this.#unsent = null;
  }

  handle(message: UpgradeAgent): void {
    const { logger } = this.#options;
    if (this.#busy) {
      logger.info({ version: message.version }, 'upgrade already in progress; request ignored');
      return;
    }
    if (message.version === this.#options.currentVersion) return;
    this.#busy = true;
    void this.#upgrade(message).finally(() => {
      this.#busy = false;
    });
  }

  async #upgrade(message: UpgradeAgent): Promise<void> {
    const { logger, tasks } = this.#options;
    const version = message.version;
    const layout: InstallLayout | null = await installLayout(this.#options.scriptPath);
    if (!layout) {
      this.#report(
        version,
        'FAILED',
        'this agent was not started through an install.sh layout (<prefix>/current -> releases/…), so it cannot swap itself: re-run the install script, or replace the file and restart it',
      );
      return;
    }
    logger.info({ version, from: this.#options.currentVersion }, 'upgrading: finishing running tasks first');
    this.#report(version, 'STARTED', '');
    tasks.pauseTasks();
    try {
      const [release] = await Promise.all([
        prepareRelease({
          layout,
          target: { version, sha256: message.sha256, sizeBytes: Number(message.sizeBytes) },
          download: (signal) => {
            const link = this.#options.link();
            if (!link) throw new UpgradeError('not connected to the control plane');
            return link.downloadAgentBundle(version, signal);
          },
          node: this.#options.node,
          signal: this.#options.signal,
        }),
        tasks.idle(),
      ]);
      if (this.#options.signal.aborted) throw new UpgradeError('the agent is stopping');
      await swapTo(layout, release);
      logger.info({ version, release }, 'upgraded: exiting for the supervisor to start the new release');
      this.#options.restart();
    } catch (error) {
      const reason = error instanceof UpgradeError ? error.message : `unexpected: ${String(error)}`;
      logger.error({ version, reason }, 'upgrade failed; this agent goes on');
      tasks.resumeTasks();
      this.#report(version, 'FAILED', reason);
      // Tasks offered while paused were left unanswered: a new session gets them again.
      this.#options.link()?.endSession();
    }
  }

  #report(version: string, state: 'STARTED' | 'FAILED', message: string): void {
    const status: UpgradeStatus = { version, state, message };
    if (this.#options.link()?.trySend({ upgradeStatus: status })) return;
    if (state === 'FAILED') this.#unsent = status;
  }
}
