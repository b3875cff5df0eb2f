import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { buildOpenApiDocument } from '../../src/app/http/openapi/document.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const architecture = readFileSync(new URL('../../docs/architecture.md', import.meta.url), 'utf8');

/**
 * The routes docs/architecture.md's route table names, as `METHOD path`. A cell lists them in
 * backticks: `GET /a`, or methods alone that share the next path (`GET`, `DELETE /a/{id}`); a
 * path without a method (`/admin/queues`) stands for every method.
 */
function documentedRoutes(markdown: string): Set<string> {
  const start = markdown.indexOf('\n### HTTP routes\n');
  if (start < 0) throw new Error('docs/architecture.md has no "### HTTP routes" section');
  const end = markdown.indexOf('\n#', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const routes = new Set<string>();
  for (const row of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const firstCell = row.split(' | ')[0]!;
    let pending: string[] = [];
    for (const [, item] of firstCell.matchAll(/`([^`]+)`/g)) {
      const m = /^((?:[A-Z]+\|)*[A-Z]+)?\s*(\/\S*)?$/.exec(item!.trim());
      if (!m) continue;
      const methods = m[1]?.split('|') ?? [];
      if (!m[2]) {
        pending.push(...methods);
        continue;
      }
      const all = [...pending, ...methods];
      for (const method of all.length ? all : ['*']) routes.add(`${method} ${m[2]}`);
      pending = [];
    }
  }
  return routes;
}

describe("docs/architecture.md's route table", () => {
  const document = buildOpenApiDocument(loadConfig({}));
  const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as Record<string, unknown>)[m] !== undefined).map((m) => `${m.toUpperCase()} ${path}`),
  );

  it('is read as routes', () => {
    const documented = documentedRoutes(architecture);
    expect(documented.has('GET /version')).toBe(true);
    expect(documented.has('DELETE /api/alerts/{id}')).toBe(true);
    expect(documented.has('* /admin/queues')).toBe(true);
  });

  it('names every operation of the OpenAPI document', () => {
    const documented = documentedRoutes(architecture);
    expect(operations.length).toBeGreaterThan(30);
    const missing = operations.filter((op) => !documented.has(op) && !documented.has(`* ${op.split(' ')[1]}`));
    expect(missing, 'add these routes to the table under "### HTTP routes" in docs/architecture.md').toEqual([]);
  });
});
