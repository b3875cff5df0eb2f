import { request, Agent } from 'node:http';
import { describe, expect, it } from 'vitest';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { testEnv, uniqueName } from '../helpers/context.js';

describe('graceful shutdown', () => {
  it('on SIGTERM finishes the request in flight, then exits 0', async () => {
    const child = spawnCli(['api'], testEnv({ PORT: '0', REDIS_PREFIX: uniqueName('swt') }));
    try {
      const listening = await waitForLog(child, (l) => l.msg === 'api listening');
      const base = new URL(String(listening.url));
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });

      // The request is in flight once the server has parsed its headers: `Expect: 100-continue`
      // makes the server say so (the client sees 'continue') before any of the body is sent.
      const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          {
            host: base.hostname,
            port: base.port,
            path: '/version',
            method: 'POST',
            agent,
            headers: { 'Content-Type': 'application/json', 'Content-Length': '2', Expect: '100-continue' },
          },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.on('continue', () => {
          child.kill('SIGTERM');
          // Send the rest only after the server has begun shutting down.
          void waitForLog(child, (l) => l.msg === 'shutting down').then(() => req.end('{}'), reject);
        });
        req.flushHeaders();
      });

      const res = await response;
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body)).toEqual({ message: 'Not Found.' });
      const exit = await exitOf(child);
      expect(exit).toEqual({ code: 0, signal: null });
      agent.destroy();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('a second signal exits at once with a non-zero code', async () => {
    const child = spawnCli(['api'], testEnv({ PORT: '0' }));
    try {
      const listening = await waitForLog(child, (l) => l.msg === 'api listening');
      const base = new URL(String(listening.url));
      // Hold the drain open with a request whose body never comes.
      const req = request({
        host: base.hostname,
        port: base.port,
        path: '/version',
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': '10', Expect: '100-continue' },
      });
      req.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        req.on('continue', () => resolve());
        req.flushHeaders();
      });
      child.kill('SIGTERM');
      await waitForLog(child, (l) => l.msg === 'shutting down');
      child.kill('SIGTERM');
      const exit = await exitOf(child);
      expect(exit.code).toBe(143);
      req.destroy();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
