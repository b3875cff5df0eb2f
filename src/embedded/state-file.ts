import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readPrivateFile, writePrivateFile } from './private-file.js';

/**
 * A running `shelfwatch all` on embedded parts leaves its URIs here (mode 0600), so that admin
 * commands such as `users:create`, run beside it with nothing set, reach the same database. It holds
 * only what that run generated (the embedded MongoDB's URI, the embedded Redis's URL with its
 * password, a random APP_KEY): a value that came from the environment is never copied to a file,
 * and admin commands take it from their own environment as the daemon did.
 */
const stateSchema = z.object({
  pid: z.number().int().positive(),
  mongoUri: z.string().optional(),
  redisUrl: z.string().optional(),
  appKey: z.string().optional(),
});
export type EmbeddedState = z.infer<typeof stateSchema>;

const FILE = 'embedded.json';
const fileOf = (dir: string): string => join(dir, FILE);

/** Throws UntrustedFileError when STATE_DIR or the file is a symlink, or not this user's alone. */
export async function writeEmbeddedState(dir: string, state: EmbeddedState): Promise<void> {
  await writePrivateFile(dir, FILE, JSON.stringify(state, null, 2) + '\n', `STATE_DIR ${dir}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The state of a live embedded instance, or undefined (no file, bad file, or its process is gone).
 * A file that someone else could have written or read is ignored, and `warn` says why.
 */
export async function readEmbeddedState(dir: string, warn: (why: string) => void = () => undefined): Promise<EmbeddedState | undefined> {
  const read = await readPrivateFile(dir, FILE, `STATE_DIR ${dir}`);
  if (!read) return undefined;
  if ('problem' in read) {
    warn(`not trusting the embedded state file: ${read.problem}`);
    return undefined;
  }
  const text = read.text;
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

/** Removes the file if it is still this process's own (another run may have replaced it since). */
export async function removeEmbeddedState(dir: string, pid: number): Promise<void> {
  const current = await readEmbeddedState(dir);
  if (current?.pid === pid) await rm(fileOf(dir), { force: true });
}
