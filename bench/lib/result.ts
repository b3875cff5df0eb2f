/**
 * Figures and how they are reported. Every figure carries its target and its ratio to that limit,
 * because an absolute time on a shared machine moves from run to run while the ratio says at once
 * how far from the target a run is. Output: one line per figure, then `RESULT <json>` as the last
 * line, and the same JSON in bench/results/<name>.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export interface Target {
  /** `>=`: at least; `<=`: at most; `==`: exactly (e.g. zero 429s). */
  readonly op: '>=' | '<=' | '==';
  readonly value: number;
  /** Where the target comes from: the issue, or a provisional one of ours. */
  readonly source?: 'issue' | 'ours';
}

export interface Figure {
  readonly name: string;
  readonly value: number | null;
  readonly unit: string;
  readonly target: Target | null;
  /** value / target (null without a target, or with a target of 0). */
  readonly ratio: number | null;
  /** Whether the target is met; null without a target or a value. */
  readonly ok: boolean | null;
  readonly note?: string;
}

export function figure(name: string, value: number | null, unit: string, target: Target | null = null, note?: string): Figure {
  const ratio = value !== null && target && target.value !== 0 ? round(value / target.value, 3) : null;
  let ok: boolean | null = null;
  if (value !== null && target) {
    ok = target.op === '>=' ? value >= target.value : target.op === '<=' ? value <= target.value : value === target.value;
  }
  return { name, value: value === null ? null : round(value, 4), unit, target, ratio, ok, ...(note ? { note } : {}) };
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export interface BenchResult {
  readonly name: string;
  readonly startedAt: string;
  readonly environment: Record<string, unknown>;
  readonly parameters: Record<string, unknown>;
  readonly figures: Figure[];
  /** Measurements that have no target (per-process CPU and RSS, raw counters). */
  readonly details: Record<string, unknown>;
  readonly notes: string[];
}

function line(f: Figure): string {
  const value = f.value === null ? 'n/a' : String(f.value);
  const target = f.target ? `target ${f.target.op} ${f.target.value}${f.target.source === 'ours' ? ' (ours)' : ''}` : 'no target';
  const ratio = f.ratio === null ? '' : `  ratio ${f.ratio}`;
  const mark = f.ok === null ? '' : f.ok ? '  ok' : '  MISSED';
  return `  ${f.name.padEnd(44)} ${`${value} ${f.unit}`.padEnd(22)} ${target}${ratio}${mark}${f.note ? `  (${f.note})` : ''}`;
}

export const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

/**
 * Prints the figures and notes (then `epilogue`, such as a summary table, when given), writes
 * bench/results/<name>.json and prints the RESULT line.
 */
export async function report(result: BenchResult, epilogue?: string): Promise<void> {
  console.log(`\n== ${result.name} ==`);
  for (const f of result.figures) console.log(line(f));
  for (const n of result.notes) console.log(`  note: ${n}`);
  if (epilogue) console.log(`\n${epilogue}\n`);
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(`${RESULTS_DIR}${result.name}.json`, JSON.stringify(result, null, 2) + '\n');
  console.log(`RESULT ${JSON.stringify(result)}`);
}
