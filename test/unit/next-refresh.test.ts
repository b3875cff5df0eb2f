import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { nextRefreshAt } from '../../src/scheduling/change-rate.js';
import { ROOT } from '../helpers/cli.js';

const HOUR = 3_600_000;
const now = new Date('2026-11-26T12:00:00Z');
const fixed = loadConfig({ SCHEDULING: 'fixed', REFRESH_INTERVAL_P1: '1h', REFRESH_INTERVAL_P0: '24h' });
const adaptive = loadConfig({ SCHEDULING: 'adaptive', REFRESH_INTERVAL_P1: '1h', REFRESH_INTERVAL_P0: '24h', REFRESH_MIN_INTERVAL: '5m' });

describe('nextRefreshAt', () => {
  it('gives each reason its time', () => {
    expect(nextRefreshAt({ why: 'unwatched' })).toBeNull();
    expect(nextRefreshAt({ why: 'first-watched', now })).toEqual(now);
    const until = new Date(now.getTime() + 600_000);
    expect(nextRefreshAt({ why: 'claimed', until })).toEqual(until);
    expect(nextRefreshAt({ why: 'given-back', due: until })).toEqual(until);
    const refreshed = { why: 'refreshed' as const, lastAttemptAt: now, changeRate: null, now };
    expect(nextRefreshAt({ ...refreshed, config: fixed, priority: 1 })).toEqual(new Date(now.getTime() + HOUR));
    expect(nextRefreshAt({ ...refreshed, config: fixed, priority: 0 })).toEqual(new Date(now.getTime() + 24 * HOUR));
    expect(nextRefreshAt({ ...refreshed, config: fixed, priority: null })).toBeNull();
  });

  it("follows the change rate under adaptive scheduling, within the priority's bounds", () => {
    const at = (changeRate: number | null) =>
      nextRefreshAt({ why: 'refreshed', config: adaptive, priority: 0, lastAttemptAt: now, changeRate, now })!.getTime() - now.getTime();
    expect(at(null)).toBe(24 * HOUR);
    expect(at(1_000)).toBe(5 * 60_000);
    expect(at(0.5)).toBeLessThan(24 * HOUR);
    expect(at(0.5)).toBeGreaterThan(5 * 60_000);
  });

  it('counts a new priority from the last attempt, and makes a product never tried due at once', () => {
    const last = new Date(now.getTime() - 2 * HOUR);
    const re = { why: 'reprioritised' as const, config: fixed, changeRate: null, now };
    expect(nextRefreshAt({ ...re, priority: 1, lastAttemptAt: last })).toEqual(new Date(last.getTime() + HOUR));
    expect(nextRefreshAt({ ...re, priority: 0, lastAttemptAt: last })).toEqual(new Date(last.getTime() + 24 * HOUR));
    expect(nextRefreshAt({ ...re, priority: 1, lastAttemptAt: null })).toEqual(now);
  });
});

/** Every .ts file of the product (not tests or benchmarks), relative to the root. */
function productFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (rel.endsWith('.ts')) out.push(rel);
    }
  };
  for (const dir of ['src', 'jobs', 'workers']) walk(dir);
  return out;
}

describe('writers of next_refresh_at', () => {
  it('all take its value from nextRefreshAt (src/scheduling/change-rate.ts)', () => {
    const offenders: string[] = [];
    const files = productFiles();
    expect(files.length).toBeGreaterThan(100);
    for (const file of files) {
      // The schema declares the field; the rule itself is the one place that makes its values.
      if (file.startsWith('src/models/') || file === 'src/scheduling/change-rate.ts') continue;
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      const line = (i: number) => `${file}:${text.slice(0, i).split('\n').length}`;
      // `next_refresh_at: <value>`: the rule's, or not a write (a projection or sort, a type, a filter).
      for (const m of text.matchAll(/(?<![.\w])next_refresh_at\s*:\s*(\S+)/g)) {
        if (!/^(nextRefreshAt\(|-?1\b|Date\b|mongoose\.trusted\(\{)/.test(m[1]!)) offenders.push(`${line(m.index)}: ${m[0]}`);
      }
      // `const next_refresh_at = …` (then written as a shorthand property): the rule's too.
      for (const m of text.matchAll(/(?<![.\w])next_refresh_at\s*=(?!=)\s*(\S+)/g)) {
        if (!m[1]!.startsWith('nextRefreshAt(')) offenders.push(`${line(m.index)}: ${m[0]}`);
      }
      // A shorthand `{ next_refresh_at }` needs such a const in its file.
      if (/[{,]\s*next_refresh_at\s*[,}]/.test(text) && !/next_refresh_at\s*=\s*nextRefreshAt\(/.test(text))
        offenders.push(`${file}: shorthand`);
    }
    expect(offenders).toEqual([]);
  });
});
