/**
 * The product's processes as real children, started with its CLI, and what the kernel says they
 * cost. CPU and peak memory come from /proc (Linux): utime+stime of /proc/<pid>/stat and VmHWM of
 * /proc/<pid>/status, which need no new package and see the whole process, native parts included.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `BENCH_CLI=dist` runs the compiled program (`npm run build` first), as production does; the
 * default runs the sources through tsx, so a benchmark never measures a stale build. tsx only costs
 * start-up time, which the measured windows leave out.
 */
/** How the product's CLI is run: from the sources through tsx, or as shipped, compiled (`npm run build`). */
export type CliBuild = 'tsx' | 'dist';

function entry(build: CliBuild = process.env.BENCH_CLI === 'dist' ? 'dist' : 'tsx'): string[] {
  if (build === 'dist') {
    const js = `${ROOT}dist/src/app/cli/main.js`;
    if (!existsSync(js)) throw new Error('BENCH_CLI=dist but dist/src/app/cli/main.js is missing: run `npm run build` first');
    return [js];
  }
  return ['--import', 'tsx', `${ROOT}src/app/cli/main.ts`];
}

export type LogLine = Record<string, unknown>;

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Log lines at warn or above, counted (a throttled job logs a warning, for instance). */
  readonly warnings: Map<string, number>;
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** The last lines of stderr, for error messages. */
  tail(): string;
  stop(timeoutMs?: number): Promise<void>;
}

const live = new Set<Child>();

/** Every child still running; the cleanup of a failed benchmark stops them. */
export function liveChildren(): readonly Child[] {
  return [...live];
}

/** `nodeArgs` go to node itself, before the program (flags such as --cpu-prof that NODE_OPTIONS refuses). */
export function spawnCli(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
  build?: CliBuild,
): Child {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
  const proc = spawn(process.execPath, [...nodeArgs, ...entry(build), ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  let tail = '';
  let partial = '';
  const warnings = new Map<string, number>();
  const waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  // stdout carries admin answers only; it is drained so that a full pipe never blocks the child.
  proc.stdout!.resume();
  proc.stderr!.on('data', (d: Buffer) => {
    const text = partial + d.toString();
    tail = (tail + d.toString()).slice(-6_000);
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const raw of lines) {
      // Parsing every request log line of a loaded api would cost this process CPU that the
      // benchmark needs: only lines someone waits for, and warnings and errors, are read.
      if (waiters.size === 0 && !/"level":[456]0/.test(raw)) continue;
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      if (typeof line.level === 'number' && line.level >= 40) {
        const msg = String(line.msg ?? '');
        warnings.set(msg, (warnings.get(msg) ?? 0) + 1);
      }
      for (const w of waiters)
        if (w.match(line)) {
          waiters.delete(w);
          w.resolve(line);
        }
    }
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));

  const child: Child = {
    name,
    proc,
    pid: proc.pid,
    warnings,
    tail: () => tail,
    waitForLog(match, timeoutMs = 60_000) {
      return new Promise<LogLine>((resolve, reject) => {
        const w = {
          match,
          resolve: (l: LogLine) => {
            clearTimeout(timer);
            proc.off('exit', onExit);
            resolve(l);
          },
        };
        const onExit = (code: number | null): void => {
          waiters.delete(w);
          clearTimeout(timer);
          reject(new Error(`${name} exited with ${code} before it was ready; its last log lines:\n${tail.slice(-2_000)}`));
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          proc.off('exit', onExit);
          reject(new Error(`${name} was not ready within ${timeoutMs} ms; its last log lines:\n${tail.slice(-2_000)}`));
        }, timeoutMs);
        waiters.add(w);
        proc.once('exit', onExit);
      });
    },
    async stop(timeoutMs = 15_000) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      live.delete(child);
    },
  };
  live.add(child);
  void exited.then(() => live.delete(child));
  return child;
}

/** Runs a CLI command to its end (admin commands such as `seed`); throws on a non-zero exit. */
export async function runCliToEnd(name: string, args: readonly string[], env: Record<string, string>, timeoutMs: number): Promise<void> {
  const child = spawnCli(name, args, env);
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.proc.kill('SIGKILL'), timeoutMs);
    child.proc.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  if (code !== 0) throw new Error(`${name} exited with ${code}: ${child.tail().slice(-1_000)}`);
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface ProcSample {
  /** User + system CPU seconds since the process started. */
  readonly cpuS: number;
  /** Peak resident set (VmHWM), MiB. */
  readonly peakRssMiB: number;
  readonly rssMiB: number;
}

/** CPU and memory of a live process, or null when /proc does not have it (gone, or not Linux). */
export function sampleProc(pid: number): ProcSample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { cpuS: (utime + stime) / ticksPerSecond(), peakRssMiB: kb('VmHWM') / 1024, rssMiB: kb('VmRSS') / 1024 };
  } catch {
    return null;
  }
}

/**
 * Sets a child's scheduling priority (nice) and says what came of it: lowering nice needs root or
 * CAP_SYS_NICE, and a benchmark without either still runs, with the refusal in its details. On Linux
 * this sets the process's main thread, the one whose event loop reads its sockets.
 */
export function prioritise(pid: number, nice: number): string {
  if (nice === 0) return 'as started (0)';
  try {
    setPriority(pid, nice);
    return String(nice);
  } catch (e) {
    return `as started: nice ${nice} refused (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
}
