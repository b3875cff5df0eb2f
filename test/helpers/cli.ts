import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The source folders `npm run build` compiles (tsconfig.build.json). */
const SOURCES = ['src', 'config', 'jobs', 'workers'];
const BUILD_INFO = 'dist/.tsbuildinfo';

function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * How a test runs the program: the build (what `npm start` runs) when it is newer than every source
 * file, as in CI, which builds just before testing; TypeScript through tsx otherwise, so an edit is
 * tested without a build. The build starts a second sooner, and the CLI tests spawn dozens of processes.
 */
function programArgs(): readonly string[] {
  try {
    const built = statSync(join(ROOT, BUILD_INFO)).mtimeMs;
    if (SOURCES.every((d) => newestSource(join(ROOT, d)) < built)) return ['dist/src/app/cli/main.js'];
  } catch {
    // no build
  }
  return ['--import', 'tsx', 'src/app/cli/main.ts'];
}
const PROGRAM = programArgs();

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the real program to completion. */
export function runCli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export function spawnCli(args: readonly string[], env: Record<string, string>): ChildProcess {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
  return spawn(process.execPath, [...PROGRAM, ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with the first parsed log line (JSON on stderr) that satisfies `match`. */
export function waitForLog(
  child: ChildProcess,
  match: (line: Record<string, unknown>) => boolean,
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`log line not seen within ${timeoutMs} ms; stderr so far:\n${buf.slice(-2000)}`));
    }, timeoutMs);
    const onData = (d: Buffer): void => {
      buf += d.toString();
      for (const raw of buf.split('\n')) {
        try {
          const line = JSON.parse(raw) as Record<string, unknown>;
          if (match(line)) {
            cleanup();
            resolve(line);
            return;
          }
        } catch {
          // not a complete JSON line yet
        }
      }
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`process exited with ${code} before the log line; stderr:\n${buf.slice(-2000)}`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
    };
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
}

export function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}
