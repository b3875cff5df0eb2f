import { COUNTRY_CODES, type Country } from '../../catalog/identifiers.js';
import { UsageError } from '../usage.js';
import { withAdminContext } from '../runtime.js';
import type { Command } from './types.js';
import { countDue } from '../../scheduler/planner.js';
import { JOB_STATES } from '../../../jobs/queues.js';

/**
 * What an operator on a shell wants to know without Bull Board or Prometheus: per country, whether
 * its queue is paused (a fatal upstream error does that), its jobs by state, the backlog waiting in
 * MongoDB, and the day's upstream calls against the quota. One JSON line.
 */
export const queuesStatusCommand: Command = {
  name: 'queues:status',
  options: {},
  required: [],
  async run(_flags, env) {
    return withAdminContext(env, async (ctx) => {
      const now = new Date();
      const countries = await Promise.all(ctx.config.countries.map(async (country) => {
        const queue = ctx.jobs.queue(country);
        const [paused, jobs, due, usedToday] = await Promise.all([
          queue.isPaused(),
          queue.getJobCounts(...JOB_STATES),
          countDue(ctx.mongo, country, now),
          ctx.usage.used(country, now),
        ]);
        const quota = ctx.config.workers.quota[country];
        return [country, { paused, jobs, due, quota: { perSecond: quota.perSecond, perDay: quota.perDay, usedToday } }] as const;
      }));
      process.stdout.write(JSON.stringify({ countries: Object.fromEntries(countries) }) + '\n');
      return 0;
    });
  },
};

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
