import { readFile } from 'node:fs/promises';
import type { ZodError } from 'zod';
import type { FlagValues } from './commands/types.js';
import { UsageError } from './usage.js';

/** A string flag's value, or undefined when it was not given. */
export function str(flags: FlagValues, name: string): string | undefined {
  const v = flags[name];
  return typeof v === 'string' ? v : undefined;
}

/** The Markdown of `--message-file`, or '' without it; an unreadable file is the operator's typo. */
export async function readMessageFile(flags: FlagValues): Promise<string> {
  const file = str(flags, 'message-file');
  if (file === undefined) return '';
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--message-file: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Input errors of an admin command are usage errors: the operator typed something wrong. */
export function describeZod(err: ZodError): string {
  return err.issues.map((i) => `--${String(i.path[0] ?? 'input')}: ${i.message}`).join('; ');
}
