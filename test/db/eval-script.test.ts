import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Redis } from 'ioredis';
import { evalScript } from '../../src/db/redis.js';
import { uniqueName } from '../helpers/context.js';

/** Scripts by SHA1 on a real Redis: the text goes over the wire only when Redis lacks it. */
let redis: Redis;
let watcher: Redis;
const key = uniqueName('swt_evalsha');

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  watcher = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await redis.del(key);
  redis.disconnect();
  watcher.disconnect();
});

describe('evalScript', () => {
  it('sends EVALSHA, and EVAL once when Redis does not know the script (a new server, SCRIPT FLUSH)', async () => {
    // A script of this test's own, so no other test has loaded it.
    const lua = `return redis.call('INCRBY', KEYS[1], ARGV[1]) -- ${key}`;
    const sent: string[] = [];
    const monitor = await watcher.monitor();
    monitor.on('monitor', (_t: string, args: string[]) => {
      if (args.includes(key)) sent.push(String(args[0]).toLowerCase());
    });
    expect(await evalScript(redis, lua, 1, key, 2)).toBe(2);
    expect(await evalScript(redis, lua, 1, key, 3)).toBe(5);
    await redis.script('FLUSH');
    expect(await evalScript(redis, lua, 1, key, 4)).toBe(9);
    await redis.get(key);
    monitor.disconnect();
    // First: unknown (EVALSHA, then EVAL); second: EVALSHA; after the flush: EVALSHA, then EVAL.
    expect(sent.filter((c) => c !== 'incrby' && c !== 'get')).toEqual(['evalsha', 'eval', 'evalsha', 'evalsha', 'eval']);
  });

  it('passes every other error through', async () => {
    await expect(evalScript(redis, `return redis.error_reply('BROKEN nope') -- ${key}`, 0)).rejects.toThrow('BROKEN nope');
  });
});
