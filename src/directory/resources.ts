import { formatDateTime } from '../http/dates.js';
import type { Owner, PostRow, UserRow } from './listing.js';

/**
 * The contract's records (Area C), field for field and in its order. `message` is the sanitised
 * HTML made at write time; `name` and `title` go out as stored, since clients escape them.
 */

export interface UserResource {
  id: string;
  name: string;
  avatar: string | null;
  title: string | null;
  message: string;
  url: string | null;
  image: string | null;
  tags: string[];
  created_at: string;
  updated_at: string;
}

export interface PostResource {
  id: string;
  title: string;
  message: string;
  url: string | null;
  image: string | null;
  /** null only if the owner's account no longer exists. */
  user: Owner | null;
  created_at: string;
  updated_at: string;
}

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
