import { Types } from 'mongoose';
import type { Logger } from '../../logger.js';
import type { Endpoints } from '../endpoints/endpoints.js';
import type { Deliveries } from './service.js';
import type { HeldDeliveries, HeldRecord } from './held.js';
import { deliveryContentSchema, digestContentSchema, type DigestContent } from './payload.js';

export interface DigestsDeps {
  readonly held: HeldDeliveries;
  readonly deliveries: Pick<Deliveries, 'queueContents'>;
  readonly endpoints: Pick<Endpoints, 'byIds'>;
  readonly logger: Logger;
  /** The clock that says which windows have closed. */
  readonly now: () => Date;
}

/**
 * The digests: every minute the scheduler (src/app/roles/digest-tick.ts, under a lock, so one
 * scheduler at a time) sends each endpoint's held deliveries whose window has closed, in ONE
 * delivery per endpoint and window that lists them newest first, through the same queue, retries,
 * disabling and records as an instant delivery. Nothing held, nothing sent.
 */
export class Digests {
  constructor(private readonly deps: DigestsDeps) {}

  /** Queues the digests due now; answers how many. */
  async flush(): Promise<number> {
    const { held } = this.deps;
    await held.claimDue(this.deps.now());
    const digests = await held.claimed();
    if (digests.size === 0) return 0;
    const endpointIds = [...new Set([...digests.values()].map((list) => list[0]!.endpoint_id.toHexString()))];
    const endpoints = await this.deps.endpoints.byIds(endpointIds.map((id) => new Types.ObjectId(id)));
    let queued = 0;
    for (const [digestId, list] of digests) {
      const endpoint = endpoints.get(list[0]!.endpoint_id.toHexString());
      // A removed or disabled endpoint gets nothing, as it would get no instant delivery.
      if (endpoint && !endpoint.disabled_at) {
        const content = this.contentOf(list);
        if (content) {
          const alertIds = [...new Map(list.flatMap((h) => h.alert_ids).map((id) => [id.toHexString(), id])).values()];
          await this.deps.deliveries.queueContents([
            { id: digestId, endpointId: endpoint._id, userId: endpoint.user_id, alertIds, content },
          ]);
          queued++;
        }
      } else {
        this.deps.logger.info({ digest: digestId, held: list.length }, 'held deliveries dropped: their endpoint is removed or disabled');
      }
      await held.release(digestId);
    }
    return queued;
  }

  /** A digest of held deliveries, newest first; null when none of them parses (nothing to send). */
  private contentOf(list: readonly HeldRecord[]): DigestContent | null {
    const sorted = [...list].sort((a, b) => b.fired_at.getTime() - a.fired_at.getTime() || (a._id < b._id ? 1 : -1));
    const items = sorted.flatMap((h) => {
      const parsed = deliveryContentSchema.safeParse(h.payload);
      if (!parsed.success) return [];
      const { endpoint_id: _e, user_id: _u, ...item } = parsed.data;
      return [{ ...item, fired_at: h.fired_at.getTime() }];
    });
    if (items.length === 0) return null;
    const first = list[0]!;
    return digestContentSchema.parse({
      type: 'digest',
      endpoint_id: first.endpoint_id.toHexString(),
      user_id: first.user_id.toHexString(),
      due_at: Math.max(...list.map((h) => h.due_at.getTime())),
      items,
    });
  }
}
