/**
 * Keeps accounts at a number of pending EAN imports (ACCOUNT_MAX_PENDING_EAN), as a client would
 * that starts a new import whenever one ends: it looks up its pending imports in MongoDB twice a
 * second (one `_id` look-up for all of them, cheaper than one API call per import) and tops each
 * account up through `POST /api/watch/ean`. It remembers which account started which import, to
 * attribute each import page's upstream call to its account.
 */
import { Types, type Connection } from 'mongoose';
import { postJson } from './account-api-client.js';

export interface ImportAccount {
  readonly hex: string;
  readonly token: string;
  /** The codes it imports, in order, each once. */
  readonly eans: readonly string[];
}

export interface ImportKeeper {
  /** Import id → the account that started it. */
  readonly owners: ReadonlyMap<string, string>;
  /** Answers other than 202 (429: a cap; the account tries again at the next look). */
  readonly refusals: Map<number, number>;
  /** Accounts that ran out of codes: from then on they were not backlogged. */
  readonly exhausted: Set<string>;
  /** Starts keeping these accounts topped up too. */
  add(accounts: readonly ImportAccount[]): void;
  stop(): Promise<void>;
}

const LOOK_EVERY_MS = 500;
const SETTLED = new Set(['done', 'not_found', 'failed']);

interface State {
  readonly account: ImportAccount;
  readonly pending: Set<string>;
  next: number;
}

export function keepImportsPending(apiUrl: string, conn: Connection, pending: number): ImportKeeper {
  const states: State[] = [];
  const owners = new Map<string, string>();
  const refusals = new Map<number, number>();
  const exhausted = new Set<string>();
  let stopped = false;

  const topUp = async (s: State): Promise<void> => {
    while (!stopped && s.pending.size < pending) {
      const ean = s.account.eans[s.next];
      if (ean === undefined) {
        exhausted.add(s.account.hex);
        return;
      }
      const answer = await postJson(apiUrl, s.account.token, '/api/watch/ean', { ean });
      if (answer.status !== 202) {
        refusals.set(answer.status, (refusals.get(answer.status) ?? 0) + 1);
        return;
      }
      s.next++;
      const id = (answer.body as { data: { id: string } }).data.id;
      owners.set(id, s.account.hex);
      s.pending.add(id);
    }
  };

  const look = async (): Promise<void> => {
    const ids = states.flatMap((s) => [...s.pending]);
    if (ids.length) {
      const docs = await conn
        .db!.collection('ean_imports')
        .find({ _id: { $in: ids.map((id) => new Types.ObjectId(id)) } }, { projection: { status: 1 } })
        .toArray();
      const settled = new Set(docs.filter((d) => SETTLED.has(String(d.status))).map((d) => String(d._id)));
      for (const s of states) for (const id of s.pending) if (settled.has(id)) s.pending.delete(id);
    }
    await Promise.all(states.map(topUp));
  };

  // One look at a time, the next one a pause after it ends: a slow MongoDB answer must not stack
  // looks up behind it.
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const loop = (): void => {
    running = look()
      .catch((err: Error) => console.error(`bench: import keeper: ${err.message}`))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, LOOK_EVERY_MS);
      });
  };
  loop();

  return {
    owners,
    refusals,
    exhausted,
    add(accounts) {
      for (const account of accounts) states.push({ account, pending: new Set(), next: 0 });
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
