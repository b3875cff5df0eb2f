import { ZodError } from 'zod';
import { DuplicateEmailError } from '../../../core/errors.js';
import { UsageError } from '../usage.js';
import { withAdminContext } from '../runtime.js';
import { describeZod, readMessageFile, str } from '../flags.js';
import type { Command } from './types.js';

export const usersCreateCommand: Command = {
  name: 'users:create',
  options: {
    name: { type: 'string' },
    email: { type: 'string' },
    title: { type: 'string' },
    avatar: { type: 'string' },
    url: { type: 'string' },
    image: { type: 'string' },
    tags: { type: 'string' },
    'message-file': { type: 'string' },
  },
  required: ['name', 'email'],
  async run(flags, env) {
    const message = await readMessageFile(flags);
    const tags =
      str(flags, 'tags')
        ?.split(',')
        .map((t) => t.trim())
        .filter(Boolean) ?? [];
    return withAdminContext(env, async (ctx) => {
      try {
        const { user, token } = await ctx.users.create({
          name: str(flags, 'name')!,
          email: str(flags, 'email')!,
          title: str(flags, 'title'),
          avatar: str(flags, 'avatar'),
          url: str(flags, 'url'),
          image: str(flags, 'image'),
          tags,
          message,
        });
        process.stdout.write(JSON.stringify({ id: user._id.toString(), token }) + '\n');
        return 0;
      } catch (err) {
        if (err instanceof ZodError) throw new UsageError(describeZod(err));
        if (err instanceof DuplicateEmailError) {
          console.error(`shelfwatch: ${err.message}`);
          return 1;
        }
        throw err;
      }
    });
  },
};

export const usersTokenCommand: Command = {
  name: 'users:token',
  options: { email: { type: 'string' }, rotate: { type: 'boolean' } },
  required: ['email'],
  async run(flags, env) {
    return withAdminContext(env, async (ctx) => {
      const user = await ctx.users.findByEmail(str(flags, 'email')!);
      if (!user) {
        console.error(`shelfwatch: no user with email ${str(flags, 'email')}`);
        return 1;
      }
      const token = flags.rotate === true ? await ctx.users.rotateToken(user._id) : await ctx.users.revealToken(user._id);
      process.stdout.write(token + '\n');
      return 0;
    });
  },
};

export const usersWeightCommand: Command = {
  name: 'users:weight',
  options: { email: { type: 'string' }, weight: { type: 'string' } },
  required: ['email', 'weight'],
  async run(flags, env) {
    const weight = Number(str(flags, 'weight'));
    if (!Number.isFinite(weight) || weight < 0.01 || weight > 1_000) throw new UsageError('--weight must be a number from 0.01 to 1000');
    return withAdminContext(env, async (ctx) => {
      const user = await ctx.users.findByEmail(str(flags, 'email')!);
      if (!user || !(await ctx.weights.set(user._id, weight))) {
        console.error(`shelfwatch: no user with email ${str(flags, 'email')}`);
        return 1;
      }
      process.stdout.write(JSON.stringify({ id: user._id.toHexString(), weight }) + '\n');
      return 0;
    });
  },
};
