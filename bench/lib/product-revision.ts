/**
 * The product code a benchmark measured: its commit and the product files changed since. The
 * product may change while a quarter-hour benchmark runs, and a figure means little without the
 * code it measured.
 */
import { execFileSync } from 'node:child_process';
import { ROOT } from './proc.js';

export interface ProductRevision {
  readonly commit: string | null;
  /** Files of src/, jobs/, workers/ and config/ that differ from the commit. */
  readonly uncommitted: readonly string[];
}

export function productRevision(): ProductRevision {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
    // Porcelain lines are `XY path`: the status columns may be spaces, so lines are not trimmed.
    const changed = git('status', '--porcelain', '--', 'src', 'jobs', 'workers', 'config')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3));
    return { commit: git('rev-parse', '--short', 'HEAD').trim(), uncommitted: changed };
  } catch {
    return { commit: null, uncommitted: [] };
  }
}
