#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError } from '../../../config/env.js';
import { EmbeddedUnavailableError } from '../../core/errors.js';
import { COMMANDS } from './commands/index.js';
import type { FlagValues } from './commands/types.js';
import { USAGE, UsageError } from './usage.js';

const ALIASES: Record<string, string> = { '--help': 'help', '-h': 'help', '--version': 'version', '-v': 'version' };

/** Parses argv and runs one command. Returns the exit code; long-running roles return once up. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number | undefined> {
  const [first, ...rest] = argv;
  const name = first === undefined ? 'all' : (ALIASES[first] ?? first);
  try {
    if (name === 'help') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    const command = COMMANDS.get(name);
    if (!command) throw new UsageError(`unknown command: ${name}`);
    let flags: FlagValues;
    try {
      ({ values: flags } = parseArgs({ args: [...rest], options: command.options, strict: true, allowPositionals: false }) as {
        values: FlagValues;
      });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    for (const req of command.required ?? []) {
      if (typeof flags[req] !== 'string' || flags[req] === '') throw new UsageError(`${name}: --${req} is required`);
    }
    const code = await command.run(flags, env);
    return command.longRunning ? undefined : code;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`shelfwatch: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      for (const line of err.problems) console.error(`shelfwatch: configuration error: ${line}`);
      return 78; // EX_CONFIG: systemd and supervisors can tell a bad configuration from a crash.
    }
    if (err instanceof EmbeddedUnavailableError) {
      console.error(`shelfwatch: ${err.message}`);
      return 69; // EX_UNAVAILABLE
    }
    console.error(`shelfwatch: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

const code = await main(process.argv.slice(2), process.env);
// Roles keep running (their handles keep the loop alive); commands end with their code. Flushing
// stdout before exit matters when it is a pipe.
if (code !== undefined) {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}
