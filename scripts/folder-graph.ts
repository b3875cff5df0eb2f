/**
 * The import graph's cycles, at two grains: files, and folders (each folder of src/ and each other
 * top-level folder is one node; files directly in src/ are the folder "src"). Type-only imports
 * count: a cycle of types still makes two modules impossible to read, test or move one without the
 * other, even though the emitted JavaScript would load.
 */
import path from 'node:path';
import madge from 'madge';

/** Each file (relative to the root, with `/`) and the files it imports. */
export type FileGraph = Readonly<Record<string, readonly string[]>>;

/** An import, file or folder, that may close a cycle, and why. */
export interface Allowance {
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export interface Allowances {
  /** Folder edges that may close a cycle: kept to a few, each named with its reason. */
  readonly folderEdges: readonly Allowance[];
  /** File imports that may close a cycle, each named with its reason. */
  readonly fileEdges: readonly Allowance[];
}

/** Folder edges a tree may allow at most: more would make the folder graph's order meaningless. */
export const MAX_FOLDER_ALLOWANCES = 3;

/** Reads the import graph of `dirs` under `root`, type-only imports included. */
export async function readImportGraph(root: string, dirs: readonly string[], tsConfig?: string): Promise<FileGraph> {
  const result = await madge(
    dirs.map((d) => path.join(root, d)),
    {
      baseDir: root,
      fileExtensions: ['ts'],
      ...(tsConfig ? { tsConfig } : {}),
      detectiveOptions: { ts: { skipTypeImports: false }, tsx: { skipTypeImports: false }, es6: { skipTypeImports: false } },
    },
  );
  const skipped = result.warnings().skipped;
  // An import madge could not resolve is an edge missing from the graph, and a cycle it would hide.
  if (skipped.length) throw new Error(`madge could not resolve ${skipped.join(', ')}`);
  return result.obj();
}

/** The folder a file counts in: src/<folder> for files under src/, else its top-level folder. */
export function folderOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return '.';
  if (parts[0] === 'src') return parts.length === 2 ? 'src' : `src/${parts[1]}`;
  return parts[0]!;
}

/** Each folder's imports of other folders, with the file imports that make each edge. */
export function folderGraph(graph: FileGraph): Map<string, Map<string, [string, string][]>> {
  const folders = new Map<string, Map<string, [string, string][]>>();
  for (const [file, imports] of Object.entries(graph)) {
    const from = folderOf(file);
    const edges = folders.get(from) ?? new Map<string, [string, string][]>();
    folders.set(from, edges);
    for (const imported of imports) {
      const to = folderOf(imported);
      if (to === from) continue;
      edges.set(to, [...(edges.get(to) ?? []), [file, imported]]);
    }
  }
  return folders;
}

type Adjacency = ReadonlyMap<string, ReadonlySet<string>>;

/** The strongly connected components with more than one node or a self-import (Tarjan's). */
function knots(adj: Adjacency): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of adj.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || adj.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of [...adj.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** A shortest cycle through the first node of `knot`, staying inside it: the one to print. */
function shortestCycle(adj: Adjacency, knot: readonly string[]): string[] {
  const inside = new Set(knot);
  const start = knot[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of [...(adj.get(v) ?? [])].sort()) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const cycle = [v];
        while (cycle[0] !== start) cycle.unshift(cameFrom.get(cycle[0]!)!);
        return [...cycle, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** The cycles of `adj`: one shortest cycle through each knot, and the knot's nodes. */
export function cyclesOf(adj: Adjacency): { cycle: string[]; knot: string[] }[] {
  return knots(adj).map((knot) => ({ cycle: shortestCycle(adj, knot), knot }));
}

const key = (from: string, to: string): string => `${from} → ${to}`;

function adjacency(edges: Iterable<[string, string]>, allowed: ReadonlySet<string>): Map<string, Set<string>> {
  const adj = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (!adj.has(from)) adj.set(from, new Set());
    if (!allowed.has(key(from, to))) adj.get(from)!.add(to);
  }
  return adj;
}

/**
 * What is wrong with `graph`: a file cycle, a folder cycle, an allowance for an import that no
 * longer exists (so the lists only shrink), or too many folder allowances. Empty when it is sound.
 */
export function graphProblems(graph: FileGraph, allowances: Allowances): string[] {
  const problems: string[] = [];
  const fileEdges = Object.entries(graph).flatMap(([file, imports]) => imports.map((i): [string, string] => [file, i]));
  const fileKeys = new Set(fileEdges.map(([a, b]) => key(a, b)));
  for (const a of allowances.fileEdges)
    if (!fileKeys.has(key(a.from, a.to))) problems.push(`allowed file import ${key(a.from, a.to)} no longer exists: remove its allowance`);
  for (const { cycle, knot } of cyclesOf(adjacency(fileEdges, new Set(allowances.fileEdges.map((a) => key(a.from, a.to)))))) {
    const others = knot.length > cycle.length - 1 ? ` (one of the cycles among ${knot.length} files: ${knot.join(', ')})` : '';
    problems.push(`file cycle: ${cycle.join(' → ')}${others}`);
  }

  const folders = folderGraph(graph);
  const folderEdges = [...folders].flatMap(([from, tos]) => [...tos.keys()].map((to): [string, string] => [from, to]));
  const folderKeys = new Set(folderEdges.map(([a, b]) => key(a, b)));
  if (allowances.folderEdges.length > MAX_FOLDER_ALLOWANCES)
    problems.push(`${allowances.folderEdges.length} folder edges are allowed to close a cycle; at most ${MAX_FOLDER_ALLOWANCES} may be`);
  for (const a of allowances.folderEdges)
    if (!folderKeys.has(key(a.from, a.to)))
      problems.push(`allowed folder edge ${key(a.from, a.to)} no longer exists: remove its allowance`);
  for (const { cycle, knot } of cyclesOf(adjacency(folderEdges, new Set(allowances.folderEdges.map((a) => key(a.from, a.to)))))) {
    const steps = cycle.slice(1).map((to, i) => {
      const from = cycle[i]!;
      const imports = folders.get(from)!.get(to)!;
      const more = imports.length > 1 ? ` and ${imports.length - 1} more` : '';
      return `\n    ${key(from, to)}: ${imports[0]![0]} imports ${imports[0]![1]}${more}`;
    });
    const others = knot.length > cycle.length - 1 ? `\n    (one of the cycles among ${knot.join(', ')})` : '';
    problems.push(`folder cycle: ${cycle.join(' → ')}${steps.join('')}${others}`);
  }
  return problems;
}
