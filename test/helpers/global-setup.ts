import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';

/**
 * Tests talk to a real Redis and a real MongoDB wire protocol; `npm test` finds them by itself:
 * - Redis: REDIS_URL; else the machine's on 127.0.0.1:6379 when it answers; else a private
 *   redis-server child (the embedded mode's code).
 * - MongoDB: MONGODB_URI; else mongodb-memory-server; where that cannot get a mongod (no network),
 *   the MongoDB stand-in in ../shared/mongo-emulator when it is there (tests only: the daemon never
 *   falls back to it); else one line saying what to set.
 * Each test file then works on its own database and Redis key prefix (test/helpers/context.ts).
 */
const LOCAL_REDIS = 'redis://127.0.0.1:6379';
const EMULATOR = fileURLToPath(new URL('../../../shared/mongo-emulator/mongo-emulator.mjs', import.meta.url));

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** The stand-in on a free port; resolves with its URI once it listens. */
function startEmulator(): Promise<{ uri: string; stop: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EMULATOR, '--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error('the MongoDB stand-in did not start within 10 s')), 10_000);
    child.once('error', (err) => reject(err));
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening on ([\d.]+):(\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      resolve({
        uri: `mongodb://${m[1]}:${m[2]}`,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: (() => Promise<void>)[] = [];

  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    if (await answers(LOCAL_REDIS)) {
      redisUrl = LOCAL_REDIS;
    } else {
      const { startEmbeddedRedis } = await import('../../src/embedded/redis-server.js');
      const redis = await startEmbeddedRedis();
      redisUrl = redis.url;
      stops.push(() => redis.stop());
    }
  }

  let mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) {
    const { startEmbeddedMongo } = await import('../../src/embedded/mongo-server.js');
    try {
      const mongo = await startEmbeddedMongo();
      mongoUri = mongo.uri;
      stops.push(() => mongo.stop());
    } catch (err) {
      if (!existsSync(EMULATOR)) {
        throw new Error(`${(err as Error).message}; or put ../shared/mongo-emulator beside this checkout`, { cause: err });
      }
      const emulator = await startEmulator();
      mongoUri = emulator.uri;
      stops.push(emulator.stop);
    }
  }

  project.provide('mongoUri', mongoUri);
  project.provide('redisUrl', redisUrl);
  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUri: string;
    redisUrl: string;
  }
}
