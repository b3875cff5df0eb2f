/**
 * The few account API calls bench:tenants makes as its accounts (alerts, browse watches, EAN imports),
 * and a bounded-concurrency loop to make many of them without queueing them all in one go.
 */

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
}

export async function postJson(apiUrl: string, token: string, path: string, body: unknown, timeoutMs = 30_000): Promise<ApiAnswer> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, body: parseBody(text) };
}

/** JSON when it is JSON (every api answer is), else the text, for an error message. */
function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Like postJson, but an answer other than `ok` statuses throws with what the api said. */
export async function postOk(apiUrl: string, token: string, path: string, body: unknown, ok: readonly number[]): Promise<ApiAnswer> {
  const answer = await postJson(apiUrl, token, path, body);
  if (!ok.includes(answer.status)) throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  return answer;
}

/** Runs `fn` over `items` with at most `limit` at once, in order of start; rejects on the first failure. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
