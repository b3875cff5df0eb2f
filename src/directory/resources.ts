import { z } from 'zod';
import { dateTimeTextSchema, formatDateTime } from '../core/dates.js';
import type { Owner, PostRow, UserRow } from './listing.js';

/**
 * The contract's records (the public directory), field for field and in its order. `message` is the sanitised
 * HTML made at write time; `name` and `title` go out as stored, since clients escape them.
 */

const urlText = z.string().meta({ description: 'A URL.' });

export const userResourceSchema = z
  .object({
    id: z.string(),
    name: z.string().meta({ description: 'Plain text: escape it before display.' }),
    avatar: urlText.nullable(),
    title: z.string().nullable().meta({ description: 'Plain text: escape it before display.' }),
    message: z.string().meta({ description: 'HTML made from sanitised Markdown: safe to display as it is.' }),
    url: urlText.nullable(),
    image: urlText.nullable(),
    tags: z.array(z.string()),
    created_at: dateTimeTextSchema,
    updated_at: dateTimeTextSchema,
  })
  .meta({ id: 'User' });
export type UserResource = z.infer<typeof userResourceSchema>;

export const postResourceSchema = z
  .object({
    id: z.string(),
    title: z.string().meta({ description: 'Plain text: escape it before display.' }),
    message: z.string().meta({ description: 'HTML made from sanitised Markdown: safe to display as it is.' }),
    url: urlText.nullable(),
    image: urlText.nullable(),
    user: z
      .object({ name: z.string(), avatar: urlText.nullable() })
      .nullable()
      .meta({ description: "The owner; null only if the owner's account no longer exists." }),
    created_at: dateTimeTextSchema,
    updated_at: dateTimeTextSchema,
  })
  .meta({ id: 'Post' });
export type PostResource = z.infer<typeof postResourceSchema>;

export function userResource(u: UserRow, timeZone: string): UserResource {
  return {
    id: u._id.toString(),
    name: u.name,
    avatar: u.avatar ?? null,
    title: u.title ?? null,
    message: u.message_html ?? '',
    url: u.url ?? null,
    image: u.image ?? null,
    tags: u.tags ?? [],
    created_at: formatDateTime(u.created_at, timeZone),
    updated_at: formatDateTime(u.updated_at, timeZone),
  };
}

export function postResource(p: PostRow, owner: Owner | undefined, timeZone: string): PostResource {
  return {
    id: p._id.toString(),
    title: p.title,
    message: p.message_html ?? '',
    url: p.url ?? null,
    image: p.image ?? null,
    user: owner ? { name: owner.name, avatar: owner.avatar ?? null } : null,
    created_at: formatDateTime(p.created_at, timeZone),
    updated_at: formatDateTime(p.updated_at, timeZone),
  };
}
