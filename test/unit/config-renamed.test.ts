import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { RENAMED_SETTINGS } from '../../config/renamed.js';
import { createLogger, warnDeprecatedSettings } from '../../src/logger.js';
import { configProblems } from '../helpers/config.js';

/** A value each renamed setting accepts that is not its default, with what the config holds then. */
const SAMPLES: Record<string, { value: string; read: (c: ReturnType<typeof loadConfig>) => unknown; expected: unknown }> = {
  DELIVERY_CONCURRENCY: { value: '7', read: (c) => c.alerts.concurrency, expected: 7 },
  DELIVERY_TIMEOUT: { value: '3s', read: (c) => c.alerts.timeoutMs, expected: 3_000 },
  DELIVERY_RETRY_SCHEDULE: { value: '1s,2s', read: (c) => c.alerts.retryScheduleMs, expected: [1_000, 2_000] },
  DELIVERY_RECORDS_PER_ENDPOINT: { value: '20', read: (c) => c.alerts.recordsPerEndpoint, expected: 20 },
  ENDPOINT_DISABLE_AFTER: { value: '1d', read: (c) => c.alerts.disableAfterMs, expected: 86_400_000 },
  ENDPOINT_ALLOW_PRIVATE: { value: 'true', read: (c) => c.alerts.allowPrivate, expected: true },
  ENDPOINT_ALLOWED_PORTS: { value: '443,8443', read: (c) => c.alerts.allowedPorts, expected: [443, 8443] },
};

/** The lines a logger writes, parsed. */
function captured(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines };
}

describe('renamed settings', () => {
  it('has a sample for every renamed setting', () => {
    expect(Object.values(RENAMED_SETTINGS).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  it.each(Object.entries(RENAMED_SETTINGS))('reads %s as %s when only the former name is set, and says so', (former, current) => {
    const sample = SAMPLES[current]!;
    const config = loadConfig({ [former]: sample.value });
    expect(sample.read(config)).toEqual(sample.expected);
    expect(config.deprecations).toEqual([expect.objectContaining({ name: former, replacement: current, ignored: false })]);
    expect(config.deprecations[0]!.message).toContain(current);
  });

  it.each(Object.entries(RENAMED_SETTINGS))('takes %s under its current name %s without a warning', (_former, current) => {
    const sample = SAMPLES[current]!;
    const config = loadConfig({ [current]: sample.value });
    expect(sample.read(config)).toEqual(sample.expected);
    expect(config.deprecations).toEqual([]);
  });

  it('lets the current name win when both are set, and warns about the former', () => {
    const config = loadConfig({ WEBHOOK_TIMEOUT: '9s', DELIVERY_TIMEOUT: '3s' });
    expect(config.alerts.timeoutMs).toBe(3_000);
    expect(config.deprecations).toEqual([
      expect.objectContaining({ name: 'WEBHOOK_TIMEOUT', replacement: 'DELIVERY_TIMEOUT', ignored: true }),
    ]);
    expect(config.deprecations[0]!.message).toMatch(/remove WEBHOOK_TIMEOUT/);
  });

  it('reports a bad value under the name it was given by', () => {
    expect(configProblems({ WEBHOOK_CONCURRENCY: 'many' })).toEqual([expect.stringMatching(/^WEBHOOK_CONCURRENCY must be/)]);
    expect(configProblems({ DELIVERY_CONCURRENCY: 'many' })).toEqual([expect.stringMatching(/^DELIVERY_CONCURRENCY must be/)]);
    // The former name's bad value is not read when the current one is set.
    expect(configProblems({ WEBHOOK_CONCURRENCY: 'many', DELIVERY_CONCURRENCY: '4' })).toEqual([]);
  });

  it('logs one warning per former name at start-up', () => {
    const config = loadConfig({ WEBHOOK_TIMEOUT: '3s', WEBHOOK_ALLOW_PRIVATE: 'true', ENDPOINT_ALLOW_PRIVATE: 'false', LOG_LEVEL: 'info' });
    const { stream, lines } = captured();
    const logger = createLogger(config, stream);
    warnDeprecatedSettings(logger, config);
    logger.flush();
    expect(lines.map((l) => [l.level, l.setting, l.replacement])).toEqual([
      [40, 'WEBHOOK_TIMEOUT', 'DELIVERY_TIMEOUT'],
      [40, 'WEBHOOK_ALLOW_PRIVATE', 'ENDPOINT_ALLOW_PRIVATE'],
    ]);
  });
});
