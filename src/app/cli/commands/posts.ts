import { ZodError } from 'zod';
import { PostService } from '../../../posts/service.js';
import { seed } from '../../../seed/seeder.js';
import { UsageError } from '../usage.js';
import { withAdminContext } from '../runtime.js';
import { describeZod, readMessageFile, str } from '../flags.js';
import type { Command, FlagValues } from './types.js';

export const postsCreateCommand: Command = {
  name: 'posts:create',
  options: {
    email: { type: 'string' },
    title: { type: 'string' },
    url: { type: 'string' },
    image: { type: 'string' },
    'message-file': { type: 'string' },
  },
  required: ['email', 'title'],
  async run(flags, env) {
    const message = await readMessageFile(flags);
    return withAdminContext(env, async (ctx) => {
      const owner = await ctx.users.findByEmail(str(flags, 'email')!);
      if (!owner) {
        console.error(`shelfwatch: no user with email ${str(flags, 'email')}`);
        return 1;
      }
      try {
        const post = await new PostService(ctx.mongo).create(owner._id, {
          title: str(flags, 'title')!,
          url: str(flags, 'url'),
          image: str(flags, 'image'),
          message,
        });
        process.stdout.write(JSON.stringify({ id: post._id.toString() }) + '\n');
        return 0;
      } catch (err) {
        if (err instanceof ZodError) throw new UsageError(describeZod(err));
        throw err;
      }
    });
  },
};

const MAX_SEED = 1_000_000;

function count(flags: FlagValues, name: string): number {
  const raw = str(flags, name) ?? '0';
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_SEED) throw new UsageError(`--${name}: must be a whole number from 0 to ${MAX_SEED}`);
  return Number(raw);
}

export const seedCommand: Command = {
  name: 'seed',
  options: { users: { type: 'string' }, posts: { type: 'string' } },
  async run(flags, env) {
    const users = count(flags, 'users');
    const posts = count(flags, 'posts');
    if (posts > 0 && users === 0) throw new UsageError('seed: --posts needs --users 1 or more (seeded users own the seeded posts)');
    return withAdminContext(env, async (ctx) => {
      const result = await seed(ctx.mongo, ctx.appKey, { users, posts });
      process.stdout.write(JSON.stringify(result) + '\n');
      return 0;
    });
  },
};
