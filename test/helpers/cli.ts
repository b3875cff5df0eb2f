import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY = 'src/app/cli/main.ts';

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the real program (TypeScript through tsx) to completion. */
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
  return spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
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
