/**
 * Readiness (GET /readyz): named checks run together, each bounded by a timeout so a hung
 * dependency answers "not ready" instead of hanging the probe.
 */

/** One dependency: resolves with null when it is usable, or with the reason it is not. */
export interface ReadinessCheck {
  name: string;
  probe(): Promise<string | null>;
}

export interface ReadinessReport {
  ready: boolean;
  /** Every check by name: 'ok', or why it failed. */
  checks: Record<string, string>;
}

export async function checkReadiness(checks: readonly ReadinessCheck[], timeoutMs = 2_000): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async (check): Promise<[string, string]> => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
      });
      try {
        const reason = await Promise.race([check.probe().catch((error: unknown) => errorText(error)), timeout]);
        return [check.name, reason ?? 'ok'];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return { ready: results.every(([, result]) => result === 'ok'), checks: Object.fromEntries(results) };
}

function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.trim() === '' && error instanceof Error ? error.name : message;
}
