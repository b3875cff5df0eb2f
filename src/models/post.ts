import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import { emitChanges } from './change-events.js';

/**
 * A recruitment post, owned by a user. The message is kept as its Markdown source and as the
 * sanitised HTML rendered from it at write time, so a read never renders.
 */
export interface PostFields {
  user_id: Types.ObjectId;
  title: string;
  message_md: string;
  message_html: string;
  url: string | null;
  image: string | null;
  /** Normalised search keys of title and message (src/search/keys.ts); never served. */
  search_keys: string[];
  /** Set by `seed` only: makes re-running it update the same posts instead of adding more. */
  seed_key?: string;
  created_at: Date;
  updated_at: Date;
}

export const postSchema = new Schema<PostFields>(
  {
    user_id: { type: Schema.Types.ObjectId, ref: 'User', required: true },
    title: { type: String, required: true, maxlength: 500 },
    message_md: { type: String, default: '', maxlength: 100_000 },
    message_html: { type: String, default: '' },
    url: { type: String, default: null, maxlength: 2048 },
    image: { type: String, default: null, maxlength: 2048 },
    search_keys: { type: [String], default: [], select: false },
    seed_key: { type: String },
  },
  {
    collection: 'posts',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
    versionKey: false,
    strict: 'throw',
  },
);

// The directory's order: newest first, _id breaking ties so that pages never repeat or skip.
// The directory's pages and the accounts of requests are kept in api processes' memory until this tells.
postSchema.plugin(emitChanges('posts'));

postSchema.index({ created_at: -1, _id: -1 });
// Directory search: one key's entries, already in the list's order (see src/search/keys.ts).
postSchema.index({ search_keys: 1, created_at: -1, _id: -1 });
// A user's posts (for the owner's views to come, and to find them when an account goes).
postSchema.index({ user_id: 1, created_at: -1 });
postSchema.index({ seed_key: 1 }, { unique: true, partialFilterExpression: { seed_key: { $type: 'string' } } });

export type PostModel = Model<PostFields>;
export type PostDoc = HydratedDocument<PostFields>;

export function postModel(conn: Connection): PostModel {
  return (conn.models.Post as PostModel | undefined) ?? conn.model<PostFields>('Post', postSchema);
}
