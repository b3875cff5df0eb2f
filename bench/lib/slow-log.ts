/**
 * Reads a MongoDB log (mongod's structured JSON log, or the CI stand-in's, which writes the same
 * "Slow query" lines when started with `--slowms`) for what one run's database did in a window:
 * the commands that examined more than a bound of keys or documents, and the slowest ones.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

const slowLine = z.object({
  t: z.object({ $date: z.string() }),
  msg: z.literal('Slow query'),
  attr: z.object({
    ns: z.string().optional(),
    command: z.record(z.string(), z.unknown()).optional(),
    planSummary: z.string().optional(),
    keysExamined: z.number().optional(),
    docsExamined: z.number().optional(),
    durationMillis: z.number(),
  }),
});

export interface SlowCommand {
  readonly at: number;
  readonly collection: string;
  readonly command: string;
  readonly plan: string | null;
  readonly keysExamined: number;
  readonly docsExamined: number;
  readonly ms: number;
}

export interface SlowLogSummary {
  /** Slow commands of the database in the window. */
  readonly slow: number;
  /** Those that examined more than `bound` keys or documents. */
  readonly unbounded: readonly SlowCommand[];
  readonly slowest: readonly SlowCommand[];
}

/** A command's name: the first field of its document (the log shortens large ones to `$truncated`). */
function commandName(command: Record<string, unknown> | undefined): string {
  const first = command ? Object.keys(command)[0] : undefined;
  if (first !== '$truncated') return first ?? 'unknown';
  return /^\{"(\w+)"/.exec(String(command!.$truncated))?.[1] ?? 'unknown';
}

export async function readSlowLog(path: string, database: string, from: number, to: number, bound = 1_000): Promise<SlowLogSummary> {
  const text = await readFile(path, 'utf8');
  const mine: SlowCommand[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"Slow query"') || !line.includes(database)) continue;
    let parsed;
    try {
      parsed = slowLine.safeParse(JSON.parse(line));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const { t, attr } = parsed.data;
    const at = Date.parse(t.$date);
    const [db, collection = ''] = (attr.ns ?? '').split(/\.(.*)/s);
    if (db !== database || at < from || at > to) continue;
    mine.push({
      at,
      collection,
      command: commandName(attr.command),
      plan: attr.planSummary ?? null,
      keysExamined: attr.keysExamined ?? 0,
      docsExamined: attr.docsExamined ?? 0,
      ms: attr.durationMillis,
    });
  }
  return {
    slow: mine.length,
    unbounded: mine.filter((c) => c.keysExamined > bound || c.docsExamined > bound),
    slowest: [...mine].sort((a, b) => b.ms - a.ms).slice(0, 5),
  };
}
