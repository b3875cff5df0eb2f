import type { AppContext } from '../context.js';
import { startApi } from './api.js';
import { ensureDemoAccount } from './demo-account.js';
import { startEmbeddedSimulator } from './simulator.js';
import { startWorkerRole } from './worker.js';
import { startSchedulerRole } from './scheduler.js';
import { startOpsServer } from './ops-server.js';

export type Role = 'all' | 'api' | 'worker' | 'scheduler';

/**
 * Starts the parts of a role on a built context. Everything started is owned by ctx.resources, so
 * closing the context stops the role, last started first: HTTP, scheduler, workers, simulator.
 */
export async function startRole(role: Role, ctx: AppContext): Promise<void> {
  switch (role) {
    case 'api':
      await startApi(ctx);
      return;
    case 'worker':
      await startWorkerRole(ctx);
      await startOpsServer(ctx, 'worker');
      return;
    case 'scheduler':
      await startSchedulerRole(ctx);
      await startOpsServer(ctx, 'scheduler');
      return;
    case 'all': {
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
