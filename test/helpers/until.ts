/**
 * Polls `check` until it returns a value other than undefined/false. For conditions that have no
 * event to wait on (a document count, a probe); bounded, and the message says what never happened.
 */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
