import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import type { Country } from '../core/identifiers.js';

/**
 * An import started by `POST /api/watch/ean`. The contract defines no states; ours: queued (jobs
 * enqueued), resolving (a country answered, others pending), done (ASINs found), not_found (every
 * country answered with none), failed (a country failed for good).
 */
export const IMPORT_STATUSES = ['queued', 'resolving', 'done', 'not_found', 'failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
export const COUNTRY_IMPORT_STATUSES = ['queued', 'done', 'not_found', 'failed'] as const;
export type CountryImportStatus = (typeof COUNTRY_IMPORT_STATUSES)[number];

export interface EanImportFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  ean: string;
  status: ImportStatus;
  /**
   * Per country: its status, the ASINs it found so far and the search page its next job reads
   * (may be absent: read as 1).
   */
  countries: {
    country: Country;
    status: CountryImportStatus;
    asins: string[];
    error: string | null;
    page?: number;
    waiting_until?: Date | null;
  }[];
  /**
   * `<user>:<ean>` while the import is pending, absent once it ends: a unique sparse index on it
   * makes a second pending import of the same code impossible, even under concurrent requests.
   */
  pending_key?: string;
  /** Set when the import settles: a TTL index removes the record then (SETTLED_IMPORT_DAYS later). */
  expires_at?: Date | null;
  created_at: Date;
  updated_at: Date;
}

const countrySchema = new Schema(
  {
    country: { type: String, required: true },
    status: { type: String, enum: COUNTRY_IMPORT_STATUSES, default: 'queued' },
    asins: { type: [String], default: [] },
    error: { type: String, default: null },
    page: { type: Number, min: 1, max: 10, default: 1 },
    // Set while the country's next page waits for the next quota day (the day's quota is spent).
    waiting_until: { type: Date, default: null },
  },
  { _id: false },
);

export const eanImportSchema = new Schema<EanImportFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    ean: { type: String, required: true },
    status: { type: String, enum: IMPORT_STATUSES, default: 'queued' },
    countries: { type: [countrySchema], default: [] },
    pending_key: { type: String },
    expires_at: { type: Date, default: null },
  },
  { collection: 'ean_imports', versionKey: false, strict: 'throw', timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' } },
);

eanImportSchema.index({ pending_key: 1 }, { unique: true, sparse: true });
eanImportSchema.index({ user_id: 1, created_at: -1 });
// The scheduler's sweep for imports whose jobs Redis may have lost.
eanImportSchema.index({ status: 1, updated_at: 1 });
// Settled imports expire; pending ones (expires_at null) never do.
eanImportSchema.index({ expires_at: 1 }, { expireAfterSeconds: 0 });

export type EanImportModel = Model<EanImportFields>;
export type EanImportDoc = HydratedDocument<EanImportFields>;

export function eanImportModel(conn: Connection): EanImportModel {
  return (conn.models.EanImport as EanImportModel | undefined) ?? conn.model<EanImportFields>('EanImport', eanImportSchema);
}
