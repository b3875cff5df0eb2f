/**
 * The lint's cycle check (`npm run lint`): fails when files, or the folders they live in, import
 * each other in a circle, type-only imports included, apart from the allowances below.
 */
import path from 'node:path';
import { graphProblems, readImportGraph, folderGraph, type Allowance } from './folder-graph.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIRS = ['src', 'jobs', 'workers', 'config'];

/** Folder edges that may close a cycle, each with why (at most three). */
const FOLDER_EDGES: readonly Allowance[] = [];

const graph = await readImportGraph(ROOT, DIRS, path.join(ROOT, 'tsconfig.json'));
const problems = graphProblems(graph, { folderEdges: FOLDER_EDGES, fileEdges: [] });
if (problems.length) {
  console.error(`Import cycles (type-only imports count):\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exitCode = 1;
} else {
  const folders = folderGraph(graph);
  const edges = [...folders.values()].reduce((n, tos) => n + tos.size, 0);
  const allowed = FOLDER_EDGES.length;
  console.log(
    `No import cycle among ${Object.keys(graph).length} files in ${folders.size} folders (${edges} folder edges)${allowed ? `, apart from ${allowed} allowed imports` : ''}.`,
  );
}
