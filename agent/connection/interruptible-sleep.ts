/** A sleep that `wake()` ends early (used so SIGTERM does not wait out a 30 s backoff). */
export class InterruptibleSleep {
  #wake: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  wake(): void {
    this.#wake?.();
  }
}
