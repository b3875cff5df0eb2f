import { escape, parse } from 'node:querystring';
import { isSecretName } from '../../../config/secrets.js';

/**
 * The request URL as a log line may show it: the path, then the query rebuilt from its parameters
 * as the app's query parser reads them, with the value of every secret one (`api_token` and
 * anything else named like a secret, config/secrets.ts) replaced.
 *
 * Matching the raw text is not enough: the parser decodes names, so `api%5Ftoken` and
 * `%61pi_token` authenticate like `api_token`. Parsing here with the same parser (node:querystring,
 * express's 'simple') sees the names the app sees. Every parameter is read, not just the first
 * 1,000 the app keeps, and a fragment is dropped as the app drops it.
 */
export function loggableUrl(url: string | undefined): string | undefined {
  if (!url) return url;
  const hash = url.indexOf('#');
  const target = hash === -1 ? url : url.slice(0, hash);
  const q = target.indexOf('?');
  if (q === -1) return target;
  const params = parse(target.slice(q + 1), '&', '=', { maxKeys: 0 });
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    const secret = isSecretName(name);
    for (const one of Array.isArray(value) ? value : [value ?? '']) pairs.push(`${escape(name)}=${secret ? '[REDACTED]' : escape(one)}`);
  }
  return pairs.length ? `${target.slice(0, q)}?${pairs.join('&')}` : target.slice(0, q);
}
