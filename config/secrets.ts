/**
 * What no configuration error and no log line may show: the value of a secret (a variable, a query
 * parameter or a field whose name says it holds one) and the password inside a URL. The rule goes
 * by name, so a new secret is covered as soon as it is named like one (`…_SECRET`, `…_PASSWORD`,
 * `…_KEY`, `…_TOKEN`, with or without a country suffix), with no list to keep up to date.
 */
import { unescape } from 'node:querystring';

const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|(^|_|API)KEY|(^|_)(PWD|PASS))(_[A-Z]{2})?$/;

/**
 * Whether a name (an environment variable, a decoded query parameter) holds a secret. Case and
 * separators do not count, so `api_token`, `API-TOKEN`, `api token` and `api_token[]` all do.
 */
export function isSecretName(name: string): boolean {
  const words = name
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return SECRET_NAME.test(words);
}

const MASK = '***';

/**
 * A URL's user information: everything between the scheme's `//` (or the start, for a URL written
 * without its scheme) and the last `@`. Taken from the text rather than from a URL parser because
 * the URLs that need it most are the ones that do not parse (a bad port, an unencoded `@` or `/` in
 * the password).
 */
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?([^]*)@/;

/** The password of `text`'s user information (after its first `:`), if it has one. */
function urlPassword(text: string): string | undefined {
  const userinfo = USERINFO.exec(text)?.[2];
  const colon = userinfo?.indexOf(':') ?? -1;
  return colon >= 0 ? userinfo!.slice(colon + 1) : undefined;
}

const QUERY_PAIR = /([?&;])([^=&;#?]*)=([^&;#]*)/g;

function decoded(component: string): string {
  return unescape(component.replace(/\+/g, ' '));
}

/**
 * `text` (a URL, well-formed or not) with its password and the values of secret query parameters
 * (`?password=…`) replaced by `***`; the rest stays as written, to help find the mistake.
 */
export function redactUrlText(text: string): string {
  const withoutPassword = text.replace(USERINFO, (all, scheme: string | undefined, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon === -1 ? all : `${scheme ?? ''}${userinfo.slice(0, colon + 1)}${MASK}@`;
  });
  return withoutPassword.replace(QUERY_PAIR, (pair, sep: string, key: string) =>
    isSecretName(decoded(key)) ? `${sep}${key}=${MASK}` : pair,
  );
}

/** A problem line of the configuration: the variable, what is wrong, and its value unless it is secret. */
export function problemLine(name: string, message: string, got: string | undefined): string {
  const shown = got === undefined || isSecretName(name) ? '' : ` (got ${JSON.stringify(redactUrlText(got))})`;
  return `${name} ${message.replace(/^Invalid input: /, '')}${shown}`;
}

/**
 * Shorter texts would match ordinary words of a message. problemLine already hides values of any
 * length; this floor only limits the backstop below.
 */
const MIN_SCRUBBED = 4;

/**
 * The secret texts of an environment: the values of secret variables (also trimmed, for one pasted
 * with a line ending), URL passwords, and secret query parameters of any value.
 */
function secretsOf(env: Readonly<Record<string, string | undefined>>): string[] {
  const found = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    if (isSecretName(name)) found.add(value).add(value.trim()).add(JSON.stringify(value).slice(1, -1));
    const password = urlPassword(value);
    if (password) found.add(password);
    for (const [, , key, v] of value.matchAll(QUERY_PAIR)) if (v && isSecretName(decoded(key!))) found.add(v).add(decoded(v));
  }
  return [...found].filter((s) => s.length >= MIN_SCRUBBED).sort((a, b) => b.length - a.length);
}

/**
 * The last line of defence: `lines` with every secret text of `env` replaced, so that a problem
 * line written by hand with a value in it cannot show a secret either.
 */
export function withoutSecretValues(lines: readonly string[], env: Readonly<Record<string, string | undefined>>): string[] {
  const secrets = secretsOf(env);
  return lines.map((line) => secrets.reduce((out, secret) => out.split(secret).join('[REDACTED]'), line));
}
