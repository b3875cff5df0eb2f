import { COUNTRY_CODES, type Country } from '../../catalog/identifiers.js';
import { UsageError } from '../usage.js';
import { withAdminContext } from '../runtime.js';
import type { Command } from './types.js';

/**
 * A credential or eligibility failure pauses a country's queue (a crash loop would only burn the
 * account's standing). Once the operator has fixed the cause, this resumes it.
 */
export const queuesResumeCommand: Command = {
  name: 'queues:resume',
  options: { country: { type: 'string' } },
  required: ['country'],
  async run(flags, env) {
    const country = String(flags.country).toUpperCase();
    if (!(COUNTRY_CODES as readonly string[]).includes(country)) throw new UsageError(`--country must be one of ${COUNTRY_CODES.join(', ')}`);
    return withAdminContext(env, async (ctx) => {
      const queue = ctx.jobs.queue(country as Country);
      const wasPaused = await queue.isPaused();
      await queue.resume();
      process.stdout.write(JSON.stringify({ country, resumed: wasPaused }) + '\n');
      return 0;
    });
  },
};
