import { z } from 'zod';
import type { Logger } from '../logger.js';
import { duplicateRedis, type Redis } from './redis.js';
import { channelName } from './redis-keys.js';
import { OBJECT_ID_RE } from './mongo.js';

/** Collections that api processes keep answers from in memory. */
export const changeTopicSchema = z.enum(['users', 'posts']);
export type ChangeTopic = z.infer<typeof changeTopicSchema>;

/** A write naming more documents or fields than this says "anything may have changed" instead. */
export const MAX_NAMED_IDS = 100;
export const MAX_NAMED_FIELDS = 50;

/**
 * One write's change, as it travels between processes (JSON). `ids`: the documents it touched;
 * absent when the write could not tell (a filter by another field, a bulk write), which means any
 * document of the collection. `fields`: for an update of `ids`, the top-level fields it set;
 * absent for inserts, deletes and writes that could not tell, which means anything about those
 * documents, their existence included.
 */
export const changeSchema = z.object({
  topic: changeTopicSchema,
  ids: z.array(z.string().regex(OBJECT_ID_RE)).min(1).max(MAX_NAMED_IDS).optional(),
  fields: z.array(z.string().min(1).max(200)).max(MAX_NAMED_FIELDS).optional(),
});
export type Change = z.infer<typeof changeSchema>;

/** What a listener hears: a change, or `all` when notices may have been missed. */
export type ChangeNotice = Change | 'all';

/** A change said at most as precisely as a message may carry it (over-long lists become "any"). */
function bounded(change: Change): Change {
  const { topic, ids, fields } = change;
  if (!ids?.length || ids.length > MAX_NAMED_IDS) return { topic };
  return fields && fields.length <= MAX_NAMED_FIELDS ? { topic, ids, fields } : { topic, ids };
}

/**
 * A message as a notice. A bare topic name (what a process of the previous release sends) is a
 * change to any document of it; anything unreadable may have been any change, so it is `all`.
 */
export function parseNotice(message: string): ChangeNotice {
  const bare = changeTopicSchema.safeParse(message);
  if (bare.success) return { topic: bare.data };
  let json: unknown;
  try {
    json = JSON.parse(message);
  } catch {
    return 'all';
  }
  const change = changeSchema.safeParse(json);
  return change.success ? change.data : 'all';
}

/**
 * Tells every process what changed in a collection whose answers are kept in memory, over Redis
 * pub/sub, so that each drops only what depends on it. The writing process hears its own change at once (before its write's caller goes on), the
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
      if (channel === this.#channel) this.#tell(parseNotice(message));
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
  async changed(what: Change): Promise<void> {
    const change = bounded(what);
    this.#tell(change);
    try {
      await this.redis.publish(this.#channel, JSON.stringify(change));
    } catch (err) {
      // The other processes' subscriptions are most likely down too (they then keep nothing), and
      // what they keep expires on its own.
      this.logger.warn({ err: { message: (err as Error).message }, topic: change.topic }, 'change notices: publish failed');
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
