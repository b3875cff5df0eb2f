import { Types, type Connection } from 'mongoose';
import { accountEventModel, type AccountEventFields } from '../../models/account-event.js';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { OBJECT_ID_RE, withTimeout } from '../../db/mongo.js';
import { findPage, type Page, type PageRequest } from '../../db/page.js';

export type AccountEvent = AccountEventFields;
export type NewAccountEvent = Omit<AccountEventFields, '_id'>;

const NEWEST_FIRST = { at: -1, _id: -1 } as const;

/** The events an account reads at GET /api/events: what the service did to its resources by itself. */
export class AccountEvents {
  constructor(private readonly conn: Connection) {}

  private get events() {
    return accountEventModel(this.conn);
  }

  /** Records an event; from a delivery, so under the delivery path's deadline. */
  async record(event: NewAccountEvent): Promise<void> {
    await withTimeout(this.events.create(event), DELIVERY_DB_TIMEOUT_MS, 'account event');
  }

  list(userId: Types.ObjectId, page: PageRequest): Promise<Page<AccountEvent>> {
    return findPage(this.events, { user_id: userId }, NEWEST_FIRST, page);
  }

  /** The account's event with this id; null for a malformed id, another account's, or none. */
  async find(userId: Types.ObjectId, id: string): Promise<AccountEvent | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    return this.events.findOne({ _id: new Types.ObjectId(id), user_id: userId }).lean();
  }
}
