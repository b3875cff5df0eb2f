import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { envSchema } from '../../config/env.js';
import { upstreamEnvSchema } from '../../config/upstream.js';
import { COUNTRY_CODES } from '../../config/countries.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const shape: Record<string, z.ZodType> = { ...envSchema.shape, ...upstreamEnvSchema.shape };

/** The configuration tables' rows: the variables of the first cell (`A` / `B`) and the default cell. */
const rows = [...readme.matchAll(/^\| (`[A-Z][^|]*?) \| ([^|]*?) \|/gm)].map((row) => ({
  names: [...row[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!),
  defaults: row[2]!,
}));

/** Every variable the configuration reads is a row of the README's configuration tables, with its default. */
describe('configuration docs', () => {
  it('documents every environment variable the schemas read', () => {
    // `X_CC` stands for each country the product knows.
    const documented = new Set(
      rows.flatMap((r) => r.names).flatMap((name) => (name.endsWith('_CC') ? COUNTRY_CODES.map((cc) => name.replace(/CC$/, cc)) : [name])),
    );
    const read = Object.keys(shape);
    expect(read.length).toBeGreaterThan(30);
    expect(read.filter((name) => !documented.has(name))).toEqual([]);
  });

  it("gives each default as the schema has it: the README's value parses to what an unset variable gets", () => {
    let checked = 0;
    const wrong: string[] = [];
    for (const row of rows) {
      // Only a plain default per variable (`600`, or `1` / `8640` for `A` / `B`): prose is read by people.
      const literals = row.defaults.split(' / ').map((d) => /^`([^`]*)`$/.exec(d.trim())?.[1]);
      if (literals.length !== row.names.length || literals.some((l) => l === undefined)) continue;
      row.names.forEach((name, i) => {
        const schema = shape[name];
        if (!schema) return;
        const unset = schema.safeParse(undefined);
        const documented = schema.safeParse(literals[i]);
        checked++;
        if (!unset.success || !documented.success || JSON.stringify(unset.data) !== JSON.stringify(documented.data))
          wrong.push(`${name}: README says \`${literals[i]}\`, unset gives ${JSON.stringify(unset.success ? unset.data : 'an error')}`);
      });
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  });
});
