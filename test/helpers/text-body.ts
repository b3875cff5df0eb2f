import type { Response } from 'superagent';

/**
 * A supertest parser that keeps the body as text: `.buffer(true).parse(textBody)`. Supertest parses
 * only the types it knows (JSON, forms, text/*); an SVG or a CSV answer would otherwise arrive empty
 * or as a Buffer.
 */
export function textBody(res: Response, cb: (err: Error | null, body: string) => void): void {
  let data = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (data += chunk));
  res.on('end', () => cb(null, data));
}
