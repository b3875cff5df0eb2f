import mongoose, { Types, type AnyBulkWriteOperation, type Connection } from 'mongoose';
import { userModel, type UserFields } from '../models/user.js';
import { postModel, type PostFields } from '../models/post.js';
import { renderMarkdown } from '../content/markdown.js';
import { postDocumentFields } from '../posts/service.js';
import { userSearchKeys } from '../directory/search-fields.js';
import { generateToken, hashToken, sealToken } from '../users/token.js';
import { fakePost, fakeUser, seedEmail } from './fake.js';

export interface SeedResult {
  readonly users: { readonly inserted: number; readonly updated: number };
  readonly posts: { readonly inserted: number; readonly updated: number };
}

// Big enough to amortise round trips, small enough to keep one batch far below 16 MB.
const BATCH = 500;

function* batches(count: number): Generator<[number, number]> {
  for (let start = 0; start < count; start += BATCH) yield [start, Math.min(start + BATCH, count)];
}

/**
 * Upserts users 0..N-1 (by their deterministic email) and posts 0..M-1 (by seed_key), each batch
 * one unordered bulk write. A seeded user gets a random token when first inserted and keeps it on
 * later runs; everything else is rewritten to the same values, so a second run changes nothing.
 * Dates are part of the fake data, so timestamps are written explicitly rather than by mongoose.
 */
export async function seed(conn: Connection, appKey: Buffer, counts: { users: number; posts: number }): Promise<SeedResult> {
  const users = userModel(conn);
  const posts = postModel(conn);
  const result = { users: { inserted: 0, updated: 0 }, posts: { inserted: 0, updated: 0 } };

  for (const [start, end] of batches(counts.users)) {
    const ops: AnyBulkWriteOperation<UserFields>[] = [];
    for (let i = start; i < end; i++) {
      const u = fakeUser(i);
      const token = generateToken();
      // Chosen here, as the token's sealed copy is bound to it; used only when this inserts.
      const id = new Types.ObjectId();
      ops.push({
        updateOne: {
          filter: { email: u.email },
          update: {
            $set: {
              name: u.name,
              title: u.title,
              avatar: u.avatar,
              url: u.url,
              image: u.image,
              tags: u.tags,
              message_md: u.message,
              message_html: renderMarkdown(u.message),
              search_keys: userSearchKeys({ name: u.name, title: u.title, message_md: u.message }),
              updated_at: u.createdAt,
            },
            // created_at is immutable in the schema, so it is written once, on insert.
            $setOnInsert: { _id: id, created_at: u.createdAt, token_hash: hashToken(token), token_cipher: sealToken(token, id, appKey) },
          },
          upsert: true,
        },
      });
    }
    const res = await users.bulkWrite(ops, { ordered: false, timestamps: false });
    result.users.inserted += res.upsertedCount;
    result.users.updated += res.matchedCount;
  }

  if (counts.posts === 0) return result;
  const owners = await ownerIds(conn, counts.users);
  for (const [start, end] of batches(counts.posts)) {
    const ops: AnyBulkWriteOperation<PostFields>[] = [];
    for (let i = start; i < end; i++) {
      const p = fakePost(i, counts.users);
      ops.push({
        updateOne: {
          filter: { seed_key: p.seedKey },
          update: {
            $set: {
              user_id: owners[p.owner]!,
              ...postDocumentFields({ title: p.title, message: p.message, url: p.url, image: p.image }),
              updated_at: p.createdAt,
            },
            $setOnInsert: { created_at: p.createdAt },
          },
          upsert: true,
        },
      });
    }
    const res = await posts.bulkWrite(ops, { ordered: false, timestamps: false });
    result.posts.inserted += res.upsertedCount;
    result.posts.updated += res.matchedCount;
  }
  return result;
}

/** The ids of seeded users 0..N-1, by position. */
async function ownerIds(conn: Connection, count: number): Promise<Types.ObjectId[]> {
  const ids: Types.ObjectId[] = [];
  for (const [start, end] of batches(count)) {
    const emails = Array.from({ length: end - start }, (_, k) => seedEmail(start + k));
    // The $in list is built here from our own emails, so it is trusted.
    const found = await userModel(conn)
      .find({ email: mongoose.trusted({ $in: emails }) })
      .select('email')
      .lean();
    const byEmail = new Map(found.map((u) => [u.email, u._id]));
    for (const email of emails) {
      const id = byEmail.get(email);
      if (!id) throw new Error(`seeded user ${email} is missing`);
      ids.push(id);
    }
  }
  return ids;
}
