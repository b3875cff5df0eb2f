import { Schema, type Connection, type Model, type Types } from 'mongoose';

export const ACCOUNT_EVENT_TYPES = ['endpoint.disabled'] as const;
export type AccountEventType = (typeof ACCOUNT_EVENT_TYPES)[number];

/** How long an account's events are kept. */
export const ACCOUNT_EVENT_DAYS = 90;

/**
 * Something the service did to an account's resources on its own (an endpoint disabled), for the
 * account to read at GET /api/events: nobody is watching a log for them.
 */
export interface AccountEventFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  type: AccountEventType;
  endpoint_id: Types.ObjectId;
  url: string;
  reason: string;
  at: Date;
}

export const accountEventSchema = new Schema<AccountEventFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    type: { type: String, enum: ACCOUNT_EVENT_TYPES, required: true },
    endpoint_id: { type: Schema.Types.ObjectId, required: true },
    url: { type: String, required: true },
    reason: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { collection: 'account_events', versionKey: false, strict: 'throw' },
);

// An account's events, newest first.
accountEventSchema.index({ user_id: 1, at: -1, _id: -1 });
accountEventSchema.index({ at: 1 }, { expireAfterSeconds: ACCOUNT_EVENT_DAYS * 86_400 });

export type AccountEventModel = Model<AccountEventFields>;

export function accountEventModel(conn: Connection): AccountEventModel {
  return (conn.models.AccountEvent as AccountEventModel | undefined) ?? conn.model<AccountEventFields>('AccountEvent', accountEventSchema);
}
