import { watchModel } from '../../../models/watch.js';
import { applyWatchChange } from '../../../watch/service.js';
import { withAdminContext } from '../runtime.js';
import type { Command } from './types.js';

const CHUNK = 500;

/**
 * Brings every watched ASIN's products in line with its watchers, in every configured country.
 * Watch changes do this as they happen; this is for after COUNTRIES gained a country (whose
 * products do not exist yet), or after restoring a backup of one collection without the other.
 */
export const watchSyncCommand: Command = {
  name: 'watch:sync',
  options: {},
  async run(_flags, env) {
    return withAdminContext(env, async (ctx) => {
      let asins = 0;
      let due = 0;
      let chunk: string[] = [];
      const flush = async (): Promise<void> => {
        due += await applyWatchChange(ctx.mongo, ctx.config, chunk);
        asins += chunk.length;
        chunk = [];
      };
      // A cursor over the distinct ASINs, so a large watchlist is never held in memory at once.
      const cursor = watchModel(ctx.mongo)
        .aggregate<{ _id: string }>([{ $match: { kind: 'asin' } }, { $group: { _id: '$key' } }])
        .cursor({ batchSize: CHUNK });
      for await (const row of cursor) {
        chunk.push(row._id);
        if (chunk.length >= CHUNK) await flush();
      }
      if (chunk.length) await flush();
      process.stdout.write(JSON.stringify({ asins, madeDue: due, countries: ctx.config.countries }) + '\n');
      return 0;
    });
  },
};
