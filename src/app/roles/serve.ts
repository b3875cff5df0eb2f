import type { AppContext } from '../context.js';

export type Role = 'all' | 'api' | 'worker' | 'scheduler';

/**
 * Starts the parts of a role on a built context. Everything started is owned by ctx.resources, so
 * closing the context stops the role, last started first: HTTP, scheduler, workers, simulator.
 *
 * Each role loads only its own parts: a worker or a scheduler never compiles or holds the api's
 * routes, its OpenAPI document or Bull Board, which every process would otherwise carry in memory.
 */
export async function startRole(role: Role, ctx: AppContext): Promise<void> {
  switch (role) {
    case 'api': {
      const { startApi } = await import('./api.js');
      await startApi(ctx);
      return;
    }
    case 'worker': {
      const [{ startWorkerRole }, { startOpsServer }] = await Promise.all([import('./worker.js'), import('./ops-server.js')]);
      await startWorkerRole(ctx);
      await startOpsServer(ctx, 'worker');
      return;
    }
    case 'scheduler': {
      const [{ startSchedulerRole }, { startOpsServer }] = await Promise.all([import('./scheduler.js'), import('./ops-server.js')]);
      await startSchedulerRole(ctx);
      await startOpsServer(ctx, 'scheduler');
      return;
    }
    case 'all': {
      const [{ startApi }, { ensureDemoAccount }, { startEmbeddedSimulator }, { startWorkerRole }, { startSchedulerRole }] =
        await Promise.all([
          import('./api.js'),
          import('./demo-account.js'),
          import('./simulator.js'),
          import('./worker.js'),
          import('./scheduler.js'),
        ]);
      // Before the workers and the api, so shutdown stops them before their upstream.
      const sim = await startEmbeddedSimulator(ctx);
      await startWorkerRole(ctx, { simulatorUrl: sim?.url });
      await startSchedulerRole(ctx);
      const api = await startApi(ctx);
      if (ctx.embedded) await ensureDemoAccount(ctx, api.url, ctx.board?.generated ? ctx.board : undefined);
      return;
    }
  }
}
