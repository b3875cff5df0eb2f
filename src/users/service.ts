import { z } from 'zod';
import mongoose, { Types, type Connection } from 'mongoose';
import { ACCOUNT_FIELDS, userModel, type AccountUser, type UserDoc } from '../models/user.js';
import { renderMarkdown } from '../content/markdown.js';
import { userSearchKeys } from '../directory/search-fields.js';
import { generateToken, hashToken, openToken, sealToken, TOKEN_LENGTH } from './token.js';
import { FEED_TOKEN_LENGTH, feedTokenOf, hashFeedToken, newFeedNonce } from './feed-token.js';
import { isDuplicateKey, LIST_QUERY_MAX_MS } from '../db/mongo.js';
import type { NoticedCache } from '../db/noticed-cache.js';
import { DuplicateEmailError, SealedSecretError, UserNotFoundError } from '../core/errors.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);

export const newUserSchema = z.object({
  name: z.string().trim().min(1, 'is required').max(200),
  email: z
    .email('must be an email address')
    .max(320)
    .transform((e) => e.toLowerCase()),
  title: z.string().max(500).nullish(),
  avatar: httpUrl.nullish(),
  url: httpUrl.nullish(),
  image: httpUrl.nullish(),
  tags: z.array(z.string().trim().min(1).max(50)).max(50).default([]),
  message: z.string().max(100_000).default(''),
});
export type NewUser = z.input<typeof newUserSchema>;

/** Accounts and their tokens. The token in the clear exists only in memory, on its way to its owner. */
export class UserService {
  constructor(
    private readonly conn: Connection,
    private readonly appKey: Buffer,
    /** Accounts by token hash, kept until a change to users (an api process's; none elsewhere). */
    private readonly accounts?: NoticedCache<AccountUser>,
  ) {}

  private get users() {
    return userModel(this.conn);
  }

  async create(input: NewUser): Promise<{ user: UserDoc; token: string }> {
    const data = newUserSchema.parse(input);
    const token = generateToken();
    // The id is chosen here because the token's sealed copy is bound to it.
    const _id = new Types.ObjectId();
    try {
      const user = await this.users.create({
        _id,
        name: data.name,
        email: data.email,
        title: data.title ?? null,
        avatar: data.avatar ?? null,
        url: data.url ?? null,
        image: data.image ?? null,
        tags: data.tags,
        message_md: data.message,
        message_html: renderMarkdown(data.message),
        search_keys: userSearchKeys({ name: data.name, title: data.title ?? null, message_md: data.message }),
        token_hash: hashToken(token),
        token_cipher: sealToken(token, _id, this.appKey),
      });
      return { user, token };
    } catch (err) {
      if (isDuplicateKey(err)) throw new DuplicateEmailError(`a user with email ${data.email} already exists`);
      throw err;
    }
  }

  /**
   * The account a token belongs to, as a request needs it (ACCOUNT_FIELDS), or null. Over-long
   * tokens are refused before any query; unknown ones are never kept, so guessing fills no memory.
   * A kept account is shared by requests: read it, never change it.
   */
  async findByToken(token: string): Promise<AccountUser | null> {
    if (token.length === 0 || token.length > TOKEN_LENGTH) return null;
    const hash = hashToken(token);
    const load = async () =>
      (await this.users.findOne({ token_hash: hash }).select(ACCOUNT_FIELDS).maxTimeMS(LIST_QUERY_MAX_MS).lean<AccountUser>()) ?? undefined;
    return (await (this.accounts ? this.accounts.get(hash, load) : load())) ?? null;
  }

  async findByEmail(email: string): Promise<UserDoc | null> {
    return this.users.findOne({ email: email.trim().toLowerCase() });
  }

  /**
   * Shows the current token to its owner (the contract's settings page). A copy that does not open
   * (moved from another account, altered) is sealed anew from `presented`, the token the request
   * authenticated with, which is the account's by its hash; without it, SealedSecretError.
   */
  async revealToken(userId: Types.ObjectId | string, presented?: string): Promise<string> {
    const user = await this.users.findById(userId).select('+token_cipher +token_hash').lean();
    if (!user) throw new UserNotFoundError('no such user');
    try {
      return openToken(user.token_cipher, user._id, this.appKey);
    } catch (err) {
      if (!(err instanceof SealedSecretError) || presented === undefined || hashToken(presented) !== user.token_hash) throw err;
      await this.users.updateOne(
        { _id: user._id, token_hash: user.token_hash },
        { $set: { token_cipher: sealToken(presented, user._id, this.appKey) } },
      );
      return presented;
    }
  }

  /** Issues a new token; the old hash is replaced in the same write, so the old token stops at once. */
  async rotateToken(userId: Types.ObjectId | string): Promise<string> {
    const token = generateToken();
    const id = typeof userId === 'string' ? new Types.ObjectId(userId) : userId;
    const res = await this.users.updateOne(
      { _id: id },
      { $set: { token_hash: hashToken(token), token_cipher: sealToken(token, id, this.appKey) } },
    );
    if (res.matchedCount === 0) throw new UserNotFoundError('no such user');
    return token;
  }

  /** The account's feed token, made on first asking (src/users/feed-token.ts). */
  async feedToken(userId: Types.ObjectId): Promise<string> {
    const user = await this.users.findById(userId).select('+feed_nonce').lean();
    if (!user) throw new UserNotFoundError('no such user');
    if (user.feed_nonce) return feedTokenOf(this.appKey, userId, user.feed_nonce);
    const nonce = newFeedNonce();
    const token = feedTokenOf(this.appKey, userId, nonce);
    // Two first requests at once: the one that wrote first is the account's token.
    const res = await this.users.updateOne(
      { _id: userId, feed_nonce: mongoose.trusted({ $exists: false }) },
      { $set: { feed_nonce: nonce, feed_token_hash: hashFeedToken(token) } },
    );
    return res.modifiedCount === 1 ? token : this.feedToken(userId);
  }

  /** A new feed token; the old one stops at once. */
  async rotateFeedToken(userId: Types.ObjectId): Promise<string> {
    const nonce = newFeedNonce();
    const token = feedTokenOf(this.appKey, userId, nonce);
    const res = await this.users.updateOne({ _id: userId }, { $set: { feed_nonce: nonce, feed_token_hash: hashFeedToken(token) } });
    if (res.matchedCount === 0) throw new UserNotFoundError('no such user');
    return token;
  }

  /** The account of a feed token, or null. */
  async findByFeedToken(token: string): Promise<AccountUser | null> {
    if (token.length !== FEED_TOKEN_LENGTH) return null;
    return this.users
      .findOne({ feed_token_hash: hashFeedToken(token) })
      .select(ACCOUNT_FIELDS)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean<AccountUser>();
  }

  /** The account's time zone for digests and quiet hours (an IANA name the caller checked); answers the account as it now is. */
  async setTimeZone(userId: Types.ObjectId, timeZone: string): Promise<AccountUser> {
    const user = await this.users
      .findOneAndUpdate({ _id: userId }, { $set: { time_zone: timeZone } }, { returnDocument: 'after' })
      .select(ACCOUNT_FIELDS)
      .lean();
    if (!user) throw new UserNotFoundError('no such user');
    return user as AccountUser;
  }
}
