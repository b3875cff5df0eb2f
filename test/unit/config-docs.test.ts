import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { envSchema } from '../../config/env.js';
import { upstreamEnvSchema } from '../../config/upstream.js';
import { renderConfigReference, SECTIONS, undescribed } from '../../scripts/config-reference.js';

const checkedIn = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const shape: Record<string, z.ZodType> = { ...envSchema.shape, ...upstreamEnvSchema.shape };

/** docs/configuration.md is generated from the schemas; this keeps the checked-in copy in step with them. */
describe('configuration reference', () => {
  it('is what `npm run docs:config` makes of the schemas', () => {
    // A plain comparison first: a diff of the whole file would bury the instruction.
    const current = checkedIn === renderConfigReference();
    expect(current, 'docs/configuration.md differs from the configuration schemas: run `npm run docs:config` and commit it').toBe(true);
  });

  it('has a section for every variable the schemas read', () => {
    const sectioned = new Set(SECTIONS.flatMap((s) => Object.keys(s.shape)));
    expect(Object.keys(shape).length).toBeGreaterThan(30);
    expect(Object.keys(shape).filter((name) => !sectioned.has(name))).toEqual([]);
  });

  it('gives every variable a meaning', () => {
    expect(undescribed()).toEqual([]);
  });

  it('shows each default as an operator writes it: the text parses to what an unset variable gets', () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const [name, schema] of Object.entries(shape)) {
      const text = (z.globalRegistry.get(schema) as { defaultText?: string } | undefined)?.defaultText;
      if (text === undefined) continue;
      checked++;
      const unset = schema.safeParse(undefined);
      const written = schema.safeParse(text);
      if (!unset.success || !written.success || JSON.stringify(unset.data) !== JSON.stringify(written.data))
        wrong.push(`${name}: the reference says \`${text}\`, unset gives ${JSON.stringify(unset.success ? unset.data : 'an error')}`);
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(10);
  });
});
