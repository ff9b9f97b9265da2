/**
 * Polls a condition until it holds or a timeout passes; replaces fixed sleeps in tests, so a test
 * is as fast as the system under it and fails with a message instead of flaking.
 */
export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Shown in the timeout error, e.g. 'all 20 messages handled'. */
  description?: string;
}

/**
 * Resolves with the condition's first result that is not false, null or undefined. The condition
 * may be async and may throw (an `expect` that does not hold yet); the last error is reported if
 * the time runs out.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 5_000, intervalMs = 20, description = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value !== undefined && value !== null && value !== false) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}${reason}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
