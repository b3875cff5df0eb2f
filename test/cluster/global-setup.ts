import type { TestProject } from 'vitest/node';
import baseSetup from '../helpers/global-setup.js';
import { startLocalCluster } from './local-cluster.js';

/**
 * `npm run test:cluster`: MongoDB as for `npm test`, and Redis as a real cluster of six
 * redis-servers (3 masters, 3 replicas) started here. Every test context and child process then
 * connects with REDIS_CLUSTER_NODES (test/helpers/context.ts); `redisUrl` still names the single
 * Redis of the default run, which nothing in these files uses.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stopBase = await baseSetup(project);
  const cluster = await startLocalCluster();
  project.provide('redisCluster', cluster.nodes.map((n) => `${n.host}:${n.port}`).join(','));
  return async () => {
    await cluster.stop();
    await stopBase();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set only under `npm run test:cluster`: the cluster's nodes as REDIS_CLUSTER_NODES takes them. */
    redisCluster?: string;
  }
}
