/**
 * Reads the lists of an answer (items, browse nodes, errors) one member at a time. A member that
 * cannot be read is left out and reported, never the answer: failing the answer would fail a batch
 * of 10 ASINs as retryable, and each retry would spend quota on the same answer again.
 */
import type { z } from 'zod';
import type { DroppedMember } from '../port.js';
import { errorDataSchema, wireBrowseNodeSchema, wireItemSchema, type WireBrowseNode, type WireErrorData, type WireItem } from './wire.js';

/** An item that names its ASIN: the only kind we can file. */
export type ReadItem = WireItem & { readonly asin: string };
/** A browse node (and its children) that names its id. */
export interface ReadNodeLink {
  readonly id: string;
  readonly displayName?: string;
  readonly contextFreeName?: string;
}
export interface ReadBrowseNode extends ReadNodeLink {
  readonly isRoot?: boolean;
  readonly ancestor?: { readonly id?: string };
  readonly children?: readonly ReadNodeLink[];
}

/** Arrays whose elements are members of their own; an element of any other array is a value of a field. */
const MEMBER_OF: Readonly<Record<string, DroppedMember['member']>> = {
  listings: 'listing',
  browseNodes: 'browse_node',
  children: 'browse_node',
};

/** More repairs than this and the member is taken as unreadable as a whole. */
const MAX_REPAIRS = 50;

type Path = readonly PropertyKey[];

function at(value: unknown, path: Path): unknown {
  let v = value;
  for (const k of path) v = (v as Record<PropertyKey, unknown>)[k];
  return v;
}

/**
 * Parses `value` with `schema`, leaving out what does not fit: for each problem, the innermost
 * array element it lies in (a listing, a browse node, one of several values), or else the field
 * itself. Returns undefined when the value as a whole does not fit (not an object at all).
 */
export function readMember<S extends z.ZodType>(schema: S, value: unknown, dropped: DroppedMember[]): z.infer<S> | undefined {
  let current = value;
  let copied = false;
  let lastDeleted = '';
  for (let i = 0; i < MAX_REPAIRS; i++) {
    const parsed = schema.safeParse(current);
    if (parsed.success) return parsed.data as z.infer<S>;
    const path = parsed.error.issues[0]?.path ?? [];
    if (path.length === 0) return undefined;
    // Repairs work on a copy: the caller's value stays as it came.
    if (!copied) {
      current = structuredClone(current);
      copied = true;
    }
    let cut = -1;
    for (let j = path.length - 1; j >= 0; j--) {
      if (typeof path[j] === 'number') {
        cut = j;
        break;
      }
    }
    if (cut > 0) {
      (at(current, path.slice(0, cut)) as unknown[]).splice(path[cut] as number, 1);
      dropped.push({ member: MEMBER_OF[String(path[cut - 1])] ?? 'field', reason: 'malformed' });
    } else {
      // Leaving the field out did not help (the schema requires it): the value does not fit.
      const key = JSON.stringify(path.map(String));
      if (key === lastDeleted) return undefined;
      lastDeleted = key;
      delete (at(current, path.slice(0, -1)) as Record<PropertyKey, unknown>)[path[path.length - 1]!];
      dropped.push({ member: 'field', reason: 'malformed' });
    }
  }
  return undefined;
}

/** The items of an answer that name their ASIN; the others are reported in `dropped`. */
export function readItems(list: readonly unknown[] | undefined, dropped: DroppedMember[]): ReadItem[] {
  const out: ReadItem[] = [];
  for (const raw of list ?? []) {
    const own: DroppedMember[] = [];
    const item = readMember(wireItemSchema, raw, own);
    if (!item || typeof item.asin !== 'string' || item.asin === '') {
      // Without its ASIN an item cannot be filed; what else was wrong with it no longer matters.
      const named = typeof raw === 'object' && raw !== null && (raw as { asin?: unknown }).asin !== undefined;
      dropped.push({ member: 'item', reason: item && !named ? 'missing_id' : 'malformed' });
      continue;
    }
    const nodes = item.browseNodeInfo?.browseNodes;
    if (nodes) {
      const kept = nodes.filter((n) => typeof n.id === 'string' && n.id !== '');
      for (let k = kept.length; k < nodes.length; k++) own.push({ member: 'browse_node', reason: 'missing_id' });
      item.browseNodeInfo!.browseNodes = kept;
    }
    dropped.push(...own);
    out.push(item as ReadItem);
  }
  return out;
}

/** The browse nodes (and children) of a getBrowseNodes answer that name their id. */
export function readBrowseNodes(list: readonly unknown[] | undefined, dropped: DroppedMember[]): ReadBrowseNode[] {
  const out: ReadBrowseNode[] = [];
  for (const raw of list ?? []) {
    const own: DroppedMember[] = [];
    const node = readMember(wireBrowseNodeSchema, raw, own);
    if (!node || typeof node.id !== 'string' || node.id === '') {
      const named = typeof raw === 'object' && raw !== null && (raw as { id?: unknown }).id !== undefined;
      dropped.push({ member: 'browse_node', reason: node && !named ? 'missing_id' : 'malformed' });
      continue;
    }
    dropped.push(...own);
    if (node.children) {
      const kept = node.children.filter((c) => typeof c.id === 'string' && c.id !== '');
      for (let k = kept.length; k < node.children.length; k++) dropped.push({ member: 'browse_node', reason: 'missing_id' });
      node.children = kept;
    }
    out.push(node as WireBrowseNode as ReadBrowseNode);
  }
  return out;
}

/** The entries of `errors`; one that is not an error entry is reported and left out. */
export function readErrors(list: readonly unknown[] | undefined, dropped: DroppedMember[]): WireErrorData[] {
  const out: WireErrorData[] = [];
  for (const raw of list ?? []) {
    const parsed = errorDataSchema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
    else dropped.push({ member: 'error', reason: 'malformed' });
  }
  return out;
}
