import { describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import type { HistoryPointFields } from '../../src/models/history-point.js';

// docs/architecture.md (the history collection) states what a history point costs; this holds the document to it.
describe('a history point', () => {
  it('is at most 200 bytes of BSON with the longest values it takes', () => {
    const at = new Date('2026-11-24T00:00:00Z');
    const point: HistoryPointFields = {
      _id: `US.B0D1234567.${at.getTime()}`,
      country: 'US',
      asin: 'B0D1234567',
      at,
      price: 123_456_789,
      currency: 'USD',
      availability: 'out_of_stock',
      buybox: false,
      rank: 9_999_999,
      expires_at: at,
    };
    expect(mongoose.mongo.BSON.calculateObjectSize(point)).toBeLessThanOrEqual(200);
  });
});
