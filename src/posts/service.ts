import { z } from 'zod';
import type { Connection, Types } from 'mongoose';
import { postModel, type PostDoc } from '../models/post.js';
import { renderMarkdown } from '../content/markdown.js';
import { postSearchKeys } from '../directory/search-fields.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);

export const newPostSchema = z.object({
  // Stored as given: the contract leaves escaping the title to clients.
  title: z.string().trim().min(1, 'is required').max(500),
  message: z.string().max(100_000).default(''),
  url: httpUrl.nullish(),
  image: httpUrl.nullish(),
});
export type NewPost = z.input<typeof newPostSchema>;

/** The fields a post document gets from its input; shared by `create` and the seeder's upserts. */
export function postDocumentFields(input: NewPost): {
  title: string;
  message_md: string;
  message_html: string;
  url: string | null;
  image: string | null;
  search_keys: string[];
} {
  const data = newPostSchema.parse(input);
  return {
    title: data.title,
    message_md: data.message,
    message_html: renderMarkdown(data.message),
    url: data.url ?? null,
    image: data.image ?? null,
    search_keys: postSearchKeys({ title: data.title, message_md: data.message }),
  };
}

/** Recruitment posts. The owner is checked by the caller (an admin command today). */
export class PostService {
  constructor(private readonly conn: Connection) {}

  async create(owner: Types.ObjectId, input: NewPost): Promise<PostDoc> {
    return postModel(this.conn).create({ user_id: owner, ...postDocumentFields(input) });
  }
}
