import { searchKeys } from '../search/keys.js';

/**
 * Which fields the directory searches, in one place for every writer (create, seed, edits to come):
 * users by name, title and message; posts by title and message. The Markdown source is keyed, not
 * the HTML, so tag and attribute names never become search terms.
 */
export function userSearchKeys(u: { name: string; title: string | null; message_md: string }): string[] {
  return searchKeys(u.name, u.title, u.message_md);
}

export function postSearchKeys(p: { title: string; message_md: string }): string[] {
  return searchKeys(p.title, p.message_md);
}
