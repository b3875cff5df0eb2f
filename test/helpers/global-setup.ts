import type { TestProject } from 'vitest/node';

/**
 * Tests talk to a real Redis (REDIS_URL, default the machine's) and a real MongoDB wire protocol
 * (MONGODB_URI; when unset, mongodb-memory-server). Each test file then works on its own database
 * and Redis key prefix (test/helpers/context.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let stop = async (): Promise<void> => undefined;
  let mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) {
    const { startEmbeddedMongo } = await import('../../src/embedded/mongo-server.js');
    const mongo = await startEmbeddedMongo();
    mongoUri = mongo.uri;
    stop = () => mongo.stop();
  }
  project.provide('mongoUri', mongoUri);
  project.provide('redisUrl', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  return stop;
}

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUri: string;
    redisUrl: string;
  }
}
