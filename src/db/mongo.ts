import mongoose, { type Connection } from 'mongoose';

// Operator objects from a request must never reach a query: sanitizeFilter wraps them in $eq, and
// filters the server builds itself opt back in with mongoose.trusted(). strictQuery 'throw' makes a
// filter on an unknown path an error instead of silently widening the query.
mongoose.set('sanitizeFilter', true);
mongoose.set('strictQuery', 'throw');

export interface MongoOptions {
  readonly uri: string;
  /** Overrides the database named in the URI (tests use one database per file). */
  readonly dbName?: string;
  readonly serverSelectionTimeoutMS?: number;
  /**
   * The driver's command events (tests, to see what is sent). Off when serving: with them on, the
   * driver decodes every reply a second time, for the event, which doubles the decoding of a page
   * of products.
   */
  readonly commandEvents?: boolean;
}

/**
 * Server-side time limit (maxTimeMS) of the list reads a request starts: past it MongoDB stops the
 * query (MaxTimeMSExpired, code 50) and the API answers 503, so no request holds the server for long.
 * Far above what an indexed page or count takes; only a pathological query reaches it.
 */
export const LIST_QUERY_MAX_MS = 3_000;

/** MongoDB's answer to a query that ran past its maxTimeMS. */
export const MAX_TIME_MS_EXPIRED = 50;

export async function connectMongo(opts: MongoOptions): Promise<Connection> {
  const conn = mongoose.createConnection(opts.uri, {
    dbName: opts.dbName,
    // Indexes are built explicitly (context.ts, `db:sync-indexes`), never behind our back.
    autoIndex: false,
    autoCreate: false,
    // Fail a request instead of queueing it while MongoDB is away; the API answers 503 and jobs retry.
    bufferCommands: false,
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 10_000,
    maxPoolSize: 50,
    monitorCommands: opts.commandEvents ?? false,
  });
  await conn.asPromise();
  return conn;
}

/**
 * Calls `count` once for every command the connection sends (heartbeats and handshakes are not
 * commands): round trips are what a refresh or a request costs MongoDB. The driver checks a
 * connection out of its pool for each command (no session here pins one), and that event is cheap
 * where a command event is not (see `commandEvents`).
 */
export function countCommands(conn: Connection, count: () => void): void {
  conn.getClient().on('connectionCheckedOut', () => count());
}

export async function pingMongo(conn: Connection, timeoutMs: number): Promise<void> {
  const db = conn.db;
  if (!db || conn.readyState !== mongoose.ConnectionStates.connected) throw new Error('not connected');
  await withTimeout(db.admin().ping({ maxTimeMS: timeoutMs }), timeoutMs, 'MongoDB ping');
}

/** Rejects with `timeoutError()` (a plain Error naming `what` by default) if `p` has not settled within `ms`. */
export function withTimeout<T>(
  p: Promise<T>,
  ms: number,
  what: string,
  timeoutError = (): Error => new Error(`${what} timed out after ${ms} ms`),
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** A write refused by a unique index: the other writer of a race won. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}

/** An ObjectId as text: 24 lower-case hex digits, as `toHexString()` writes it. */
export const OBJECT_ID_RE = /^[0-9a-f]{24}$/;
