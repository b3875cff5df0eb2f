import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const ROOT = import.meta.dirname;

/**
 * Layers import one way, each only from itself and the layers before it in this list, so that a
 * lower layer can be loaded, tested and reasoned about without the ones above it. A path named in
 * a later layer is carved out of an earlier one that contains it (src/app is app, not domain).
 * test/ and bench/ belong to no layer and may import anything.
 *
 * - infrastructure: what a process needs before it knows anything of products: its settings
 *   (config/), its logger and version, and its lifecycle (start, signals, orderly close);
 * - core: the vocabulary every folder speaks (identifiers, the product's schemas, dates, quota
 *   classes, errors, the Metrics registry), which may read config/ and nothing else of ours;
 * - domain: the rest of src/, one folder per concern;
 * - jobs: the job kinds and the workers that run them;
 * - app: the composition (context, roles, routes, command line), which may import anything.
 * Inside a layer, scripts/check-folder-graph.ts keeps the folders from importing each other in a circle.
 */
const LAYERS = [
  { name: 'infrastructure', paths: ['config', 'src/logger.ts', 'src/version.ts', 'src/lifecycle'] },
  { name: 'core', paths: ['src/core'] },
  { name: 'domain', paths: ['src'] },
  { name: 'jobs', paths: ['jobs', 'workers'] },
  { name: 'app', paths: ['src/app'] },
];

const inside = (file, dir) => !path.relative(dir, file).startsWith('..');
const asGlob = (p) => (path.extname(p) ? p : `${p}/**`);
const shown = (p) => (path.extname(p) ? p : `${p}/`);

/** Paths of other layers nested in `dir` (src/app in src), which `dir`'s layer does not own. */
function carvedOut(dir) {
  return LAYERS.flatMap((l) => l.paths).filter((p) => p !== dir && inside(p, dir));
}

/** The rule's zones for `layer`: every later layer is off limits. */
function zones(layer) {
  const later = LAYERS.slice(LAYERS.indexOf(layer) + 1);
  return later.flatMap((other) =>
    other.paths.map((from) => ({
      target: layer.paths,
      from,
      except: carvedOut(from).map((p) => path.relative(from, p)),
      message: `Layer "${layer.name}" (${layer.paths.map(shown).join(', ')}) may not import layer "${other.name}" (${shown(from)}): layers import one way, ${LAYERS.map((l) => l.name).join(' ← ')}.`,
    })),
  );
}

const rule = (layer) => ['error', { basePath: ROOT, zones: zones(layer) }];

/** One block per layer but the last, which may import anything. */
function layerBlocks() {
  return LAYERS.slice(0, -1).map((layer) => ({
    files: layer.paths.map(asGlob),
    ignores: layer.paths.flatMap(carvedOut).map(asGlob),
    rules: { 'import-x/no-restricted-paths': rule(layer) },
  }));
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  {
    files: ['src/app/cli/**', 'bench/**', 'test/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  {
    plugins: { 'import-x': importX },
    // NodeNext imports name the emitted `.js`; the TypeScript resolver maps them to the `.ts` source.
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: path.join(ROOT, 'tsconfig.json') })] },
  },
  ...layerBlocks(),
);
