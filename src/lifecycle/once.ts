/**
 * A close that runs once: every call gets the first call's promise, so two owners racing to stop
 * the same thing (a signal and an error path) wait for one close instead of starting a second.
 */
export function once<T>(fn: () => Promise<T>): (() => Promise<T>) & { readonly started: boolean } {
  let running: Promise<T> | undefined;
  const run = () => (running ??= fn());
  return Object.defineProperty(run, 'started', { get: () => running !== undefined }) as (() => Promise<T>) & { readonly started: boolean };
}
