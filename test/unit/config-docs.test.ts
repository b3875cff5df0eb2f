import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../../config/env.js';
import { upstreamEnvSchema } from '../../config/upstream.js';

/** Every variable the configuration reads is a row of the README's configuration tables. */
describe('configuration docs', () => {
  it('documents every environment variable the schemas read', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    // A row's first cell names one variable or several (`A` / `B`); `X_CC` stands for each country.
    const documented = new Set(
      [...readme.matchAll(/^\| (`[A-Z][^|]*?) \|/gm)]
        .flatMap((row) => [...row[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!))
        .flatMap((name) => (name.endsWith('_CC') ? ['JP', 'US'].map((cc) => name.replace(/CC$/, cc)) : [name])),
    );
    const read = [...Object.keys(envSchema.shape), ...Object.keys(upstreamEnvSchema.shape)];
    expect(read.length).toBeGreaterThan(30);
    expect(read.filter((name) => !documented.has(name))).toEqual([]);
  });
});
