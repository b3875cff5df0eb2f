import type { Change, ChangeTopic } from '../db/change-notices.js';
import { documentTag, type Dropped } from '../db/noticed-cache.js';
import type { PostRow, UserRow } from './listing.js';

/**
 * What a kept directory page depends on, as NoticedCache tags: the records it shows (a post page
 * also its owners), and which of its list's pages it is. An update of a record drops the pages that
 * show it; a change that may move records between pages (an insert, a delete, a new creation time)
 * drops every page of its list, and one to the search keys every searched page.
 */

/** Fields that decide which page a record is on: the order (created_at, _id). */
const ORDER_FIELDS = new Set(['_id', 'created_at']);
/** Fields that decide whether a record matches a search. */
const SEARCH_FIELDS = new Set(['search_keys']);

function listTag(topic: ChangeTopic, searched: boolean): string {
  return `${topic}:${searched ? 'search' : 'list'}`;
}

export function userPageTags(items: readonly UserRow[], searched: boolean): string[] {
  return [listTag('users', searched), ...items.map((u) => documentTag('users', u._id.toHexString()))];
}

export function postPageTags(items: readonly PostRow[], searched: boolean): string[] {
  const owners = new Set(items.map((p) => p.user_id.toHexString()));
  return [
    listTag('posts', searched),
    ...items.map((p) => documentTag('posts', p._id.toHexString())),
    ...[...owners].map((id) => documentTag('users', id)),
  ];
}

/** The pages a change drops (a change that names no records drops them all). */
export function directoryDrops(change: Change): Dropped {
  const { topic, ids, fields } = change;
  if (!ids) return 'all';
  const tags = ids.map((id) => documentTag(topic, id));
  if (!fields || fields.some((f) => ORDER_FIELDS.has(f))) tags.push(listTag(topic, false), listTag(topic, true));
  else if (fields.some((f) => SEARCH_FIELDS.has(f))) tags.push(listTag(topic, true));
  return tags;
}
