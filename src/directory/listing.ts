import mongoose, { type Connection, type Model, type QueryFilter, type Types } from 'mongoose';
import { userModel, type UserFields } from '../models/user.js';
import { postModel, type PostFields } from '../models/post.js';
import type { SearchQuery } from '../search/keys.js';
import { LIST_QUERY_MAX_MS } from '../db/mongo.js';
import { offsetIn } from '../db/page.js';

/**
 * The directory's two list queries: newest first with `_id` breaking ties (both indexed, so page
 * boundaries are stable and a client paging through sees each record once), optionally narrowed
 * by a keyword search on `search_keys`. Every read carries LIST_QUERY_MAX_MS: these lists are
 * public, so no request may hold MongoDB for long.
 */

export interface ListRequest {
  readonly page: number;
  readonly limit: number;
  readonly search: SearchQuery;
}

export interface ListResult<T> {
  readonly items: T[];
  readonly total: number;
}

export interface UserRow {
  _id: Types.ObjectId;
  name: string;
  avatar: string | null;
  title: string | null;
  message_html: string;
  url: string | null;
  image: string | null;
  tags: string[];
  created_at: Date;
  updated_at: Date;
}

export interface PostRow {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  title: string;
  message_html: string;
  url: string | null;
  image: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Owner {
  name: string;
  avatar: string | null;
}

// Only what the answers show: email, tokens, Markdown sources and search keys never leave MongoDB.
const USER_FIELDS = 'name avatar title message_html url image tags created_at updated_at';
const POST_FIELDS = 'user_id title message_html url image created_at updated_at';
const ORDER = { created_at: -1, _id: -1 } as const;

/** The filter of a search, or null when nothing can match. */
function filterOf<T>(search: SearchQuery): QueryFilter<T> | null {
  if (search.kind === 'none') return null;
  return (search.kind === 'match' ? search.filter : {}) as QueryFilter<T>;
}

async function page<T>(req: ListRequest, count: () => Promise<number>, fetch: (offset: number) => Promise<T[]>): Promise<ListResult<T>> {
  const total = await count();
  // Past the end there is nothing to fetch; asking would only make the server walk `offset` entries.
  const offset = offsetIn(req, total);
  return { items: offset === null ? [] : await fetch(offset), total };
}

// Unfiltered, the total comes from collection metadata (O(1)) instead of counting every document;
// on a replica set it is exact except just after an unclean shutdown, which a client tolerates as it
// tolerates writes between two page requests.
function counter<T>(model: Model<T>, filter: QueryFilter<T>, search: SearchQuery): () => Promise<number> {
  return search.kind === 'all'
    ? () => model.estimatedDocumentCount().maxTimeMS(LIST_QUERY_MAX_MS).exec()
    : () => model.countDocuments(filter).maxTimeMS(LIST_QUERY_MAX_MS).exec();
}

export async function listUsers(conn: Connection, req: ListRequest): Promise<ListResult<UserRow>> {
  const filter = filterOf<UserFields>(req.search);
  if (!filter) return { items: [], total: 0 };
  const users = userModel(conn);
  return page(req, counter(users, filter, req.search), (offset) =>
    users.find(filter).select(USER_FIELDS).sort(ORDER).skip(offset).limit(req.limit).maxTimeMS(LIST_QUERY_MAX_MS).lean<UserRow[]>().exec(),
  );
}

export async function listPosts(conn: Connection, req: ListRequest): Promise<ListResult<PostRow>> {
  const filter = filterOf<PostFields>(req.search);
  if (!filter) return { items: [], total: 0 };
  const posts = postModel(conn);
  return page(req, counter(posts, filter, req.search), (offset) =>
    posts.find(filter).select(POST_FIELDS).sort(ORDER).skip(offset).limit(req.limit).maxTimeMS(LIST_QUERY_MAX_MS).lean<PostRow[]>().exec(),
  );
}

/** The owners of a page of posts, by id, in one query. */
export async function ownersOf(conn: Connection, posts: readonly PostRow[]): Promise<Map<string, Owner>> {
  const ids = [...new Set(posts.map((p) => p.user_id.toString()))];
  if (ids.length === 0) return new Map();
  // Built from ObjectIds we read ourselves, so the operator is trusted.
  const users = await userModel(conn)
    .find({ _id: mongoose.trusted({ $in: ids }) })
    .select('name avatar')
    .maxTimeMS(LIST_QUERY_MAX_MS)
    .lean<(Owner & { _id: Types.ObjectId })[]>();
  return new Map(users.map((u) => [u._id.toString(), { name: u.name, avatar: u.avatar }]));
}
