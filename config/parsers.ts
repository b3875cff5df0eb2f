/**
 * Parsers of environment values, shared by every configuration section. Messages are predicates
 * ("must be …") because loadConfig prints them after the variable's name.
 */
import { z } from 'zod';
import { ConnectionString } from 'mongodb-connection-string-url';

export const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ type: `integer ${min}–${max}` });

/** A duration such as `90s`, `15m`, `1h`, `1d` or plain milliseconds, `0` included; in ms. */
export const durationOrZero = z
  .string()
  .regex(/^\d+(ms|s|m|h|d)?$/, 'must be a duration such as 500ms, 30s, 15m, 1h or 1d')
  .transform((v) => {
    const [, n, unit] = /^(\d+)(ms|s|m|h|d)?$/.exec(v)!;
    const scale = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(unit ?? 'ms') as 'ms'];
    return Number(n) * scale;
  })
  .meta({ type: 'duration or 0' });

/** A duration such as `90s`, `15m`, `1h`, `1d` or plain milliseconds; in ms. */
export const duration = durationOrZero.pipe(z.number().min(1, 'must be longer than 0')).meta({ type: 'duration' });

export const bool = z.stringbool({ truthy: ['1', 'true', 'yes', 'on'], falsy: ['0', 'false', 'no', 'off'] }).meta({ type: 'boolean' });

/** A URL whose protocol matches `protocols` (e.g. /^https?:$/). */
export const url = (protocols: RegExp, what: string) =>
  z
    .string()
    .refine((v) => {
      try {
        return protocols.test(new URL(v).protocol);
      } catch {
        return false;
      }
    }, `must be ${what} URL`)
    .meta({ type: `${what.replace(/^an? /, '')} URL` });

/**
 * A MongoDB connection string as the driver reads it: `mongodb://` with one host or a replica set's
 * list (`h1:27017,h2:27017`), or `mongodb+srv://`. The WHATWG URL parser refuses host lists, so it
 * cannot judge these.
 */
export const mongoUri = z
  .string()
  .refine((v) => {
    try {
      // The parser takes any digits as a port; the driver would only fail at connection time.
      return new ConnectionString(v).hosts.every((host) => {
        const port = /:(\d+)$/.exec(host)?.[1];
        return port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
      });
    } catch {
      return false;
    }
  }, 'must be a mongodb:// or mongodb+srv:// connection string (a replica set lists its hosts separated by commas)')
  .meta({ type: 'MongoDB connection string' });

/**
 * A credential that goes on the wire as written: printable ASCII, no spaces. A value that breaks
 * this is nearly always a paste with a line ending (an EnvironmentFile saved with CRLF) or a space.
 */
export const secretText = z
  .string()
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces or line endings (was a line ending pasted with it?)');

/** A string that holds JSON, parsed; `message` says what it must be when it does not parse. */
export const jsonText = (message: string) =>
  z.string().transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
  });

/** A decimal number such as `0.5` or `120`. */
export const decimal = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, `must be a number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ type: `number ${min}–${max}` });

export const timeZone = z
  .string()
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone such as UTC or Asia/Tokyo')
  .meta({ type: 'IANA time zone' });

/** `localhost`, 127.0.0.0/8 or ::1, as the WHATWG URL parser writes a hostname (`127.1` becomes `127.0.0.1`). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * An https URL, or an http one to this machine: what carries a credential or a bearer token may go
 * in clear text only to a local simulator or proxy, never across a network.
 */
export const secureUrl = z
  .string()
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' || (u.protocol === 'http:' && isLoopbackHost(u.hostname));
    } catch {
      return false;
    }
  }, 'must be an https URL (http only to loopback: 127.0.0.0/8, ::1, localhost)')
  .meta({ type: 'https URL' });
