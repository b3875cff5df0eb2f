import { z } from 'zod';
import type { Logger } from '../logger.js';
import { duplicateRedis, type Redis } from './redis.js';
import { channelName } from './redis-keys.js';

/** Collections that api processes keep answers from in memory. */
export const changeTopicSchema = z.enum(['users', 'posts']);
export type ChangeTopic = z.infer<typeof changeTopicSchema>;

/** What a listener hears: one collection changed, or `all` when notices may have been missed. */
export type ChangeNotice = ChangeTopic | 'all';

/**
 * Tells every process that a collection whose answers are kept in memory changed, over Redis
 * pub/sub. The writing process hears its own change at once (before its write's caller goes on), the
 * others as soon as Redis delivers the message.
 *
 * Pub/sub delivers at most once: a message sent while a subscriber is away is lost. So a process
 * is `live` only while its subscription stands; when the connection drops, listeners hear `all` and
 * keep nothing until it is back (they hear `all` again then, since changes may have passed).
 */
export class ChangeNotices {
  readonly #channel: string;
  readonly #listeners = new Set<(notice: ChangeNotice) => void>();
  #sub: Redis | undefined;
  #live = false;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.#channel = channelName(prefix, 'changed');
  }

  /** Whether every change made anywhere reaches this process now. */
  get live(): boolean {
    return this.#live;
  }

  /** Subscribes on a connection of its own (a subscribed connection can send nothing else). */
  listen(): void {
    if (this.#sub) return;
    // Resubscribed by hand on every `ready`, so that `live` turns true only once the subscription stands.
    const sub = duplicateRedis(this.redis, {
      connectionName: 'shelfwatch:change-notices',
      autoResubscribe: false,
      enableOfflineQueue: true,
    });
    this.#sub = sub;
    sub.on('message', (channel: string, message: string) => {
      const topic = changeTopicSchema.safeParse(message);
      if (channel === this.#channel && topic.success) this.#tell(topic.data);
    });
    sub.on('ready', () => {
      sub.subscribe(this.#channel).then(
        () => {
          this.#live = true;
          this.#tell('all');
        },
        (err: Error) => this.logger.warn({ err: { message: err.message } }, 'change notices: subscribe failed'),
      );
    });
    sub.on('close', () => this.#down());
    // ioredis logs nothing by itself; the command connection already reports Redis being away.
    sub.on('error', () => this.#down());
  }

  /** Calls `listener` with every notice until the returned function is called. */
  onChange(listener: (notice: ChangeNotice) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells this process now and every other through Redis; a failed publish is logged, not thrown. */
  async changed(topic: ChangeTopic): Promise<void> {
    this.#tell(topic);
    try {
      await this.redis.publish(this.#channel, topic);
    } catch (err) {
      // The other processes' subscriptions are most likely down too (they then keep nothing), and
      // what they keep expires on its own.
      this.logger.warn({ err: { message: (err as Error).message }, topic }, 'change notices: publish failed');
    }
  }

  async close(): Promise<void> {
    const sub = this.#sub;
    this.#sub = undefined;
    this.#down();
    if (sub) await sub.quit().catch(() => sub.disconnect());
  }

  #down(): void {
    if (!this.#live) return;
    this.#live = false;
    this.#tell('all');
  }

  #tell(notice: ChangeNotice): void {
    for (const listener of this.#listeners) listener(notice);
  }
}
