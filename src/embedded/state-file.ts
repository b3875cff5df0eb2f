import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * A running `shelfwatch all` on embedded parts leaves its URIs here (mode 0600), so that admin
 * commands such as `users:create`, run beside it with nothing set, reach the same database.
 */
const stateSchema = z.object({
  pid: z.number().int().positive(),
  mongoUri: z.string(),
  redisUrl: z.string(),
  appKey: z.string(),
  httpUrl: z.string().optional(),
});
export type EmbeddedState = z.infer<typeof stateSchema>;

const fileOf = (dir: string): string => join(dir, 'embedded.json');

export async function writeEmbeddedState(dir: string, state: EmbeddedState): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(fileOf(dir), JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The state of a live embedded instance, or undefined (no file, bad file, or its process is gone). */
export async function readEmbeddedState(dir: string): Promise<EmbeddedState | undefined> {
  let text: string;
  try {
    text = await readFile(fileOf(dir), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = stateSchema.safeParse(
    (() => {
      try {
        return JSON.parse(text);
      } catch {
        return null;
      }
    })(),
  );
  if (!parsed.success || !alive(parsed.data.pid)) return undefined;
  return parsed.data;
}

export async function removeEmbeddedState(dir: string, pid: number): Promise<void> {
  const current = await readEmbeddedState(dir);
  if (!current || current.pid === pid) await rm(fileOf(dir), { force: true });
}
