import type { Request, Response } from 'express';

/** A JSON answer made once and sent as it is: its bytes and their entity tag. */
export interface KeptAnswer {
  readonly body: Buffer;
  readonly etag: string | undefined;
}

/**
 * `value` as the bytes `res.json` would send (the app's `json spaces`; no replacer is set), with the
 * entity tag the app's ETag setting makes for them, so that a kept answer is sent without
 * serialising or hashing it again.
 */
export function keepJson(req: Request, value: unknown): KeptAnswer {
  const spaces = req.app.get('json spaces') as number | string | undefined;
  const body = Buffer.from(JSON.stringify(value, undefined, spaces), 'utf8');
  const etagOf = req.app.get('etag fn') as ((body: Buffer) => string | undefined) | undefined;
  return { body, etag: etagOf?.(body) };
}

/** Sends a kept answer as `res.json` sends a fresh one; a matching If-None-Match gets a 304. */
export function sendKept(res: Response, answer: KeptAnswer): void {
  res.set('Content-Type', 'application/json; charset=utf-8');
  if (answer.etag) res.set('ETag', answer.etag);
  res.send(answer.body);
}
