import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderOf, graphProblems, readImportGraph, type FileGraph } from '../../scripts/folder-graph.js';

const none = { folderEdges: [], fileEdges: [] };

/** Layered one way: app → watch → core → config, and a file directly in src/. */
const SOUND: FileGraph = {
  'src/app/context.ts': ['src/watch/service.ts', 'src/logger.ts'],
  'src/watch/service.ts': ['src/core/identifiers.ts', 'src/watch/present.ts'],
  'src/watch/present.ts': ['src/core/identifiers.ts'],
  'src/core/identifiers.ts': ['config/countries.ts'],
  'src/core/errors.ts': ['src/core/identifiers.ts'],
  'src/logger.ts': ['config/env.ts'],
  'src/version.ts': [],
  'config/countries.ts': [],
  'config/env.ts': [],
};

describe('folderOf', () => {
  it('counts each folder of src/ as one, files directly in src/ as "src", and other folders whole', () => {
    expect(folderOf('src/alerts/channels/message.ts')).toBe('src/alerts');
    expect(folderOf('src/logger.ts')).toBe('src');
    expect(folderOf('jobs/kind.ts')).toBe('jobs');
    expect(folderOf('config/env.ts')).toBe('config');
  });
});

describe('graphProblems', () => {
  it('finds nothing in a graph whose imports point one way', () => {
    expect(graphProblems(SOUND, none)).toEqual([]);
  });

  it('fails on a new folder cycle, naming each step and a file import that makes it', () => {
    // No file is in a cycle: only the folders are.
    const graph = { ...SOUND, 'src/core/errors.ts': ['src/core/identifiers.ts', 'src/watch/present.ts'] };
    const problems = graphProblems(graph, none);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('folder cycle: src/core → src/watch → src/core');
    expect(problems[0]).toContain('src/core → src/watch: src/core/errors.ts imports src/watch/present.ts');
    expect(problems[0]).toContain('src/watch → src/core: src/watch/service.ts imports src/core/identifiers.ts and 1 more');
  });

  it('fails on a cycle through files directly in src/', () => {
    const graph = { ...SOUND, 'src/version.ts': ['src/app/context.ts'] };
    expect(graphProblems(graph, none)).toEqual([expect.stringContaining('folder cycle: src → src/app → src')]);
  });

  it('lets an allowed folder edge close a cycle, and fails once the edge is gone', () => {
    const graph = { ...SOUND, 'src/core/errors.ts': ['src/core/identifiers.ts', 'src/watch/present.ts'] };
    const allowed = { folderEdges: [{ from: 'src/core', to: 'src/watch', why: 'test' }], fileEdges: [] };
    expect(graphProblems(graph, allowed)).toEqual([]);
    expect(graphProblems(SOUND, allowed)).toEqual([expect.stringContaining('allowed folder edge src/core → src/watch no longer exists')]);
  });

  it('allows at most three folder edges', () => {
    const edges = ['src/watch', 'src/app', 'src', 'config'].map((to) => ({ from: 'src/core', to, why: 'test' }));
    const graph = { ...SOUND, 'src/core/errors.ts': ['src/watch/present.ts', 'src/app/context.ts', 'src/version.ts', 'config/env.ts'] };
    expect(graphProblems(graph, { folderEdges: edges, fileEdges: [] })).toEqual([
      '4 folder edges are allowed to close a cycle; at most 3 may be',
    ]);
    expect(graphProblems(graph, { folderEdges: edges.slice(0, 3), fileEdges: [] })).toEqual([]);
  });

  it('fails on a file cycle inside one folder, which the folder graph cannot see', () => {
    const graph = { ...SOUND, 'src/watch/present.ts': ['src/core/identifiers.ts', 'src/watch/service.ts'] };
    expect(graphProblems(graph, none)).toEqual([
      expect.stringContaining('file cycle: src/watch/present.ts → src/watch/service.ts → src/watch/present.ts'),
    ]);
    const allowed = { folderEdges: [], fileEdges: [{ from: 'src/watch/present.ts', to: 'src/watch/service.ts', why: 'test' }] };
    expect(graphProblems(graph, allowed)).toEqual([]);
  });
});

describe('readImportGraph', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'folder-graph-'));
    await mkdir(path.join(root, 'src', 'rules'), { recursive: true });
    await mkdir(path.join(root, 'src', 'endpoints'), { recursive: true });
    // Only types cross, in both directions: the emitted JavaScript has no import at all.
    await writeFile(
      path.join(root, 'src/rules/rule.ts'),
      "import type { Endpoint } from '../endpoints/endpoint.js';\nexport interface Rule { readonly to: Endpoint }\n",
    );
    await writeFile(
      path.join(root, 'src/endpoints/endpoint.ts'),
      "import type { Rule } from '../rules/rule.js';\nexport interface Endpoint { readonly rules: readonly Rule[] }\n",
    );
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('reads type-only imports, so a cycle of types fails the check at both grains', async () => {
    const graph = await readImportGraph(root, ['src']);
    expect(graph).toEqual({ 'src/endpoints/endpoint.ts': ['src/rules/rule.ts'], 'src/rules/rule.ts': ['src/endpoints/endpoint.ts'] });
    expect(graphProblems(graph, none)).toEqual([
      'file cycle: src/endpoints/endpoint.ts → src/rules/rule.ts → src/endpoints/endpoint.ts',
      expect.stringContaining('folder cycle: src/endpoints → src/rules → src/endpoints'),
    ]);
  });
});
