import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UntrustedFileError } from '../core/errors.js';

/**
 * A file of secrets for other processes of the same user, in a directory of that user. Anyone else
 * who could write the directory, plant a symlink or read the file could take the secrets, make us
 * overwrite a file of their choosing, or hand us a database of their own; so writing never follows a
 * symlink and reading trusts only what this user alone can read and write.
 */

/** What the trust check reads of a file's status (an injected one in tests). */
export type FileFacts = Pick<Stats, 'uid' | 'mode' | 'isFile' | 'isDirectory' | 'isSymbolicLink'>;

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
// Opening a FIFO planted in place of the file must not block: the check below then refuses it.
const NONBLOCK = constants.O_NONBLOCK ?? 0;

const octal = (mode: number): string => (mode & 0o777).toString(8).padStart(4, '0');

/**
 * Why a file (or, with `kind: 'dir'`, a directory) is not to be trusted with secrets, as a phrase
 * after its path; undefined when it is. A directory may be readable by others (the file itself is
 * not), but not writable: whoever can write it can swap the file. `uid` is undefined where the
 * platform has no user ids.
 */
export function untrustedBecause(
  facts: FileFacts,
  uid: number | undefined = process.getuid?.(),
  kind: 'file' | 'dir' = 'file',
): string | undefined {
  if (facts.isSymbolicLink()) return 'is a symlink';
  if (kind === 'file' && !facts.isFile()) return 'is not a regular file';
  if (kind === 'dir' && !facts.isDirectory()) return 'is not a directory';
  if (uid !== undefined && facts.uid !== uid) return `is owned by uid ${facts.uid}, not by this user (uid ${uid})`;
  const must = kind === 'file' ? 'it must be 0600' : 'it should be 0700';
  if (facts.mode & 0o022) return `is writable by other users (mode ${octal(facts.mode)}; ${must})`;
  if (kind === 'file' && facts.mode & 0o044) return `is readable by other users (mode ${octal(facts.mode)}; ${must})`;
  if (kind === 'file' && facts.mode & 0o011) return `is open to other users (mode ${octal(facts.mode)}; ${must})`;
  return undefined;
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'ENOENT';
}

/**
 * Writes `text` to `dir/name` with mode 0600, creating `dir` (0700) if needed. The text goes to a
 * new temporary file (created exclusively, never through a symlink) that then replaces the target
 * in one rename, so no reader sees half a file and a planted link is never followed. `dirLabel`
 * names the directory in errors (the variable that chose it).
 */
export async function writePrivateFile(given: string, name: string, text: string, dirLabel = given): Promise<void> {
  // Resolved, so that a trailing slash does not make lstat follow a symlinked directory.
  const dir = resolve(given);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const dirWhy = untrustedBecause(await lstat(dir), undefined, 'dir');
  if (dirWhy) throw new UntrustedFileError(`${dirLabel} ${dirWhy}`);
  const target = join(dir, name);
  const existing = await lstat(target).catch((err: unknown) => {
    if (isMissing(err)) return undefined;
    throw err;
  });
  if (existing?.isSymbolicLink()) throw new UntrustedFileError(`${target} is a symlink`);
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o600);
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

export type PrivateRead =
  | { readonly text: string }
  /** Present but not trusted; `problem` says which path and why. */
  | { readonly problem: string }
  /** No file (or no directory). */
  | undefined;

/** Reads `dir/name` if it and its directory pass the trust check; the file is checked on the open descriptor, so it cannot be swapped between check and read. */
export async function readPrivateFile(given: string, name: string, dirLabel = given): Promise<PrivateRead> {
  const dir = resolve(given);
  let dirFacts: Stats;
  try {
    dirFacts = await lstat(dir);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  const dirWhy = untrustedBecause(dirFacts, undefined, 'dir');
  if (dirWhy) return { problem: `${dirLabel} ${dirWhy}` };
  const path = join(dir, name);
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // O_NOFOLLOW on a symlink: ELOOP on Linux, EMLINK on the BSDs.
    if (code === 'ELOOP' || code === 'EMLINK') return { problem: `${path} is a symlink` };
    return { problem: `${path} cannot be opened (${code ?? (err as Error).message})` };
  }
  try {
    const why = untrustedBecause(await handle.stat());
    if (why) return { problem: `${path} ${why}` };
    return { text: await handle.readFile('utf8') };
  } finally {
    await handle.close();
  }
}
