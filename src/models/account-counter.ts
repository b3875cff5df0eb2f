import { Schema, type Connection, type Model, type Types } from 'mongoose';

/**
 * Per-account counters of what the account holds (`alerts`, …), one document per account, `_id`
 * the account's id. Each field is a count that src/accounts/counters.ts moves with conditional
 * `$inc`s, so a cap holds under concurrent requests; a field is absent until first needed, then
 * seeded from a real count.
 */
export interface AccountCounterFields {
  _id: Types.ObjectId;
  [field: string]: unknown;
}

// Not strict: the fields are the callers' (counters.ts takes the name as a parameter).
export const accountCounterSchema = new Schema<AccountCounterFields>(
  { _id: { type: Schema.Types.ObjectId, required: true } },
  { collection: 'account_counters', versionKey: false, strict: false, strictQuery: false },
);

export type AccountCounterModel = Model<AccountCounterFields>;

export function accountCounterModel(conn: Connection): AccountCounterModel {
  return (
    (conn.models.AccountCounter as AccountCounterModel | undefined) ??
    conn.model<AccountCounterFields>('AccountCounter', accountCounterSchema)
  );
}
