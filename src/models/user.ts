import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import { emitChanges } from './change-events.js';

/**
 * An account: a public profile (served by the directory) and private parts that never leave the
 * server except to their owner: the email and the API token, kept as a SHA-256 hash for look-up and
 * as an AES-GCM copy under APP_KEY for showing it again.
 */
export interface UserFields {
  name: string;
  email: string;
  avatar: string | null;
  title: string | null;
  message_md: string;
  message_html: string;
  url: string | null;
  image: string | null;
  tags: string[];
  /** Normalised search keys of name, title and message (src/search/keys.ts); never served. */
  search_keys: string[];
  token_hash: string;
  token_cipher: string;
  /** The deals feed's token comes from it and the app key (src/users/feed-token.ts); absent until first shown. */
  feed_nonce?: string;
  feed_token_hash?: string;
  /**
   * The account's weight in fair sharing (src/fairness/): with every account backlogged, each gets
   * its weight's share of a country's forced updates, imports, crawls and webhook deliveries. Set
   * by an operator (`shelfwatch users:weight`); 1 unless set.
   */
  share_weight: number;
  /** The IANA zone of the account's daily digests and quiet hours; null: the server's APP_TIMEZONE. */
  time_zone: string | null;
  created_at: Date;
  updated_at: Date;
}

export const userSchema = new Schema<UserFields>(
  {
    name: { type: String, required: true, maxlength: 200 },
    email: { type: String, required: true, lowercase: true, trim: true, maxlength: 320 },
    avatar: { type: String, default: null, maxlength: 2048 },
    title: { type: String, default: null, maxlength: 500 },
    message_md: { type: String, default: '', maxlength: 100_000 },
    message_html: { type: String, default: '' },
    url: { type: String, default: null, maxlength: 2048 },
    image: { type: String, default: null, maxlength: 2048 },
    tags: { type: [String], default: [] },
    search_keys: { type: [String], default: [], select: false },
    token_hash: { type: String, required: true, select: false },
    token_cipher: { type: String, required: true, select: false },
    feed_nonce: { type: String, select: false },
    feed_token_hash: { type: String, select: false },
    share_weight: { type: Number, default: 1, min: 0.01, max: 1_000 },
    time_zone: { type: String, default: null, maxlength: 100 },
  },
  {
    collection: 'users',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
    versionKey: false,
    strict: 'throw',
  },
);

// The directory's pages and the accounts of requests are kept in api processes' memory until this tells.
userSchema.plugin(emitChanges('users'));

userSchema.index({ email: 1 }, { unique: true });
userSchema.index({ token_hash: 1 }, { unique: true });
// The deals feed's look-up; accounts that never showed their feed have none.
userSchema.index({ feed_token_hash: 1 }, { unique: true, partialFilterExpression: { feed_token_hash: { $exists: true } } });
// The directory's order: newest first, _id breaking ties so that pages never repeat or skip.
userSchema.index({ created_at: -1, _id: -1 });
// Directory search: one key's entries, already in the list's order (see src/search/keys.ts).
userSchema.index({ search_keys: 1, created_at: -1, _id: -1 });

/**
 * What a request knows of its account: everything but the profile's message and the secrets. Read
 * once per authenticated request, so it leaves out what could be large (a message is up to 100 kB,
 * its HTML more) and is read as plain data, not a mongoose document.
 */
export const ACCOUNT_FIELDS = {
  name: 1,
  email: 1,
  avatar: 1,
  title: 1,
  url: 1,
  image: 1,
  tags: 1,
  share_weight: 1,
  time_zone: 1,
  created_at: 1,
  updated_at: 1,
} as const;
export type AccountUser = Pick<UserFields, keyof typeof ACCOUNT_FIELDS> & { _id: Types.ObjectId };

export type UserModel = Model<UserFields>;
export type UserDoc = HydratedDocument<UserFields>;

export function userModel(conn: Connection): UserModel {
  return (conn.models.User as UserModel | undefined) ?? conn.model<UserFields>('User', userSchema);
}
