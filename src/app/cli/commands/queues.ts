import type { Country } from '../../../core/identifiers.js';
import { UsageError } from '../usage.js';
import { adminConfig, withAdminContext } from '../runtime.js';
import type { Command } from './types.js';
import { countDue } from '../../../scheduling/due.js';
import { JOB_STATES, QUEUE_CLASSES } from '../../../../jobs/queue-names.js';

/**
 * What an operator on a shell wants to know without Bull Board or Prometheus: per country, whether
 * its queues are paused (a fatal upstream error does that), their jobs by state, the backlog waiting
 * in MongoDB, the quota governor's day: permits granted, calls left, the forced-update share used
 * and the mean wait for a permit, the pace's margin on top of 1/Q, and the country's breaker (open
 * while the upstream refuses the country, with why and when the next probe goes). One JSON line.
 */
export const queuesStatusCommand: Command = {
  name: 'queues:status',
  options: {},
  required: [],
  async run(_flags, env) {
    return withAdminContext(env, async (ctx) => {
      const now = new Date();
      const countries = await Promise.all(
        ctx.config.countries.map(async (country) => {
          const [queues, due, day, marginMs, breaker] = await Promise.all([
            Promise.all(
              QUEUE_CLASSES.map(async (cls) => {
                const queue = ctx.jobs.queue(country, cls);
                const [paused, jobs] = await Promise.all([queue.isPaused(), queue.getJobCounts(...JOB_STATES)]);
                return [cls, { name: queue.name, paused, jobs }] as const;
              }),
            ),
            countDue(ctx.mongo, country, now),
            ctx.quota.day(country, now.getTime()),
            ctx.quota.marginMs(country),
            ctx.breakers.status(country),
          ]);
          const quota = ctx.config.quota.quotas[country];
          const byClass = Object.fromEntries(queues);
          return [
            country,
            {
              paused: queues.some(([, q]) => q.paused),
              jobs: byClass.refresh!.jobs,
              updates: byClass.forced!.jobs,
              imports: byClass.import!.jobs,
              crawls: byClass.crawl!.jobs,
              due,
              quota: {
                perSecond: quota.perSecond,
                burst: quota.burst,
                perDay: quota.perDay,
                day: day.day.key,
                usedToday: day.used,
                permitsToday: day.used,
                callsLeftToday: Math.max(0, day.limit - day.used),
                forcedUsedToday: day.forcedUsed,
                forcedShareUsed: day.forcedLimit > 0 ? day.forcedUsed / day.forcedLimit : 0,
                importsToday: day.classes.import.used,
                importShareUsed: day.classes.import.limit > 0 ? day.classes.import.used / day.classes.import.limit : 0,
                crawlsToday: day.classes.crawl.used,
                crawlShareUsed: day.classes.crawl.limit > 0 ? day.classes.crawl.used / day.classes.crawl.limit : 0,
                meanPermitWaitMs: Math.round(day.meanWaitMs),
                spent: day.spent,
                paceMarginMs: Math.round(marginMs * 10) / 10,
              },
              breaker:
                breaker.state === 'closed'
                  ? { state: 'closed' }
                  : {
                      state: 'open',
                      kind: breaker.kind,
                      reason: breaker.reason,
                      since: new Date(breaker.since).toISOString(),
                      nextProbeAt: new Date(breaker.probeAt).toISOString(),
                    },
            },
          ] as const;
        }),
      );
      process.stdout.write(JSON.stringify({ countries: Object.fromEntries(countries) }) + '\n');
      return 0;
    });
  },
};

/**
 * Resumes a country's queues paused by an operator (or by a fatal upstream error outside the
 * breaker). The breaker pauses and resumes its own; resuming by hand while it is open makes any
 * later pause the operator's, which the breaker's closing leaves alone.
 */
export const queuesResumeCommand: Command = {
  name: 'queues:resume',
  options: { country: { type: 'string' } },
  required: ['country'],
  async run(flags, env) {
    const country = String(flags.country).toUpperCase();
    // Only the countries of COUNTRIES have queues: another known code names nothing to resume.
    const { countries } = adminConfig(env);
    if (!(countries as readonly string[]).includes(country)) throw new UsageError(`--country must be one of ${countries.join(', ')}`);
    return withAdminContext(env, async (ctx) => {
      const queues = QUEUE_CLASSES.map((cls) => ctx.jobs.queue(country as Country, cls));
      const wasPaused = (await Promise.all(queues.map((q) => q.isPaused()))).some(Boolean);
      await ctx.breakers.forgetPause(country as Country);
      await Promise.all(queues.map((q) => q.resume()));
      process.stdout.write(JSON.stringify({ country, resumed: wasPaused }) + '\n');
      return 0;
    });
  },
};
