import type { ParseArgsConfig } from 'node:util';

export type FlagValues = Record<string, string | boolean | undefined>;

export interface Command {
  readonly name: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /** Flags that must be given. */
  readonly required?: readonly string[];
  /** A role: run() resolves once it is up, and the process lives on until a signal ends it. */
  readonly longRunning?: boolean;
  /** Returns the exit code. Long-running roles resolve once they are up; signals end them. */
  run(flags: FlagValues, env: NodeJS.ProcessEnv): Promise<number>;
}
