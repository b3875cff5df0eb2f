import { Schema, type Connection, type Model, type Types } from 'mongoose';

/**
 * Where an address stands with one account (double opt-in): `pending` until its owner confirms
 * through the link mailed to it, `confirmed` (alert and test mails go to it), `unsubscribed` (its
 * owner said stop, by the List-Unsubscribe link), `bounced` (its server refused mail permanently,
 * EMAIL_BOUNCE_LIMIT times in a row). Only `confirmed` gets alert and test mails.
 */
export const EMAIL_STATES = ['pending', 'confirmed', 'unsubscribed', 'bounced'] as const;
export type EmailState = (typeof EMAIL_STATES)[number];

export interface EmailAddressFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  /** As alerts store it: the local part as written, the domain in lower case. */
  address: string;
  state: EmailState;
  /** When the last confirmation mail was sent (at most one a day); null before the first. */
  confirmation_sent_at: Date | null;
  confirmed_at: Date | null;
  /**
   * When the address last left `confirmed` by its owner's or its server's word (unsubscribed,
   * bounced): a confirmation link issued before it confirms nothing, so an old link cannot undo a
   * later unsubscribe.
   */
  closed_at: Date | null;
  /** Permanent refusals since the last accepted mail or confirmation. */
  bounces: number;
  created_at: Date;
  updated_at: Date;
}

export const emailAddressSchema = new Schema<EmailAddressFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    address: { type: String, required: true },
    state: { type: String, enum: EMAIL_STATES, required: true, default: 'pending' },
    confirmation_sent_at: { type: Date, default: null },
    confirmed_at: { type: Date, default: null },
    closed_at: { type: Date, default: null },
    bounces: { type: Number, default: 0 },
  },
  {
    collection: 'email_addresses',
    versionKey: false,
    strict: 'throw',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
  },
);

// One record per account and address: concurrent alert creations naming it meet here.
emailAddressSchema.index({ user_id: 1, address: 1 }, { unique: true });

export type EmailAddressModel = Model<EmailAddressFields>;

export function emailAddressModel(conn: Connection): EmailAddressModel {
  return (conn.models.EmailAddress as EmailAddressModel | undefined) ?? conn.model<EmailAddressFields>('EmailAddress', emailAddressSchema);
}
