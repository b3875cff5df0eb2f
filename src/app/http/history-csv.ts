import { z } from 'zod';
import type { Request, Response } from 'express';
import type { ZodOpenApiResponseObject } from 'zod-openapi';
import type { AppContext } from '../context.js';
import type { Country } from '../../core/identifiers.js';
import { NotFoundError } from '../../core/errors.js';
import { HISTORY_CSV_COLUMNS, historyCsvChunks } from '../../catalog/history-csv.js';
import type { HistoryRange } from '../../catalog/world-catalog.js';

/**
 * A product's whole history as a CSV download: `history.csv`, and the JSON history route when the
 * request prefers `text/csv`. Every point of the range is read from a cursor and written as it is
 * read, at the pace the client takes it.
 */

/** Whether the request's Accept prefers CSV to JSON; JSON stays the answer to a wildcard and to no Accept. */
export function prefersCsv(req: Request): boolean {
  return req.accepts(['application/json', 'text/csv']) === 'text/csv';
}

/** The OpenAPI content of a CSV answer. */
export const historyCsvContent = {
  'text/csv': {
    schema: z.string().meta({
      description:
        `RFC 4180, UTF-8: a header (${HISTORY_CSV_COLUMNS.join(',')}), then one record per point, oldest first; ` +
        'values as the JSON point has them, null as an empty field; a text field that starts with =, +, -, @, tab or CR ' +
        'is prefixed with a single quote.',
      example: 'at,price,currency,availability,buybox,rank\r\n2026-11-24 09:30:00,1980,JPY,in_stock,true,123\r\n',
    }),
  },
} as const;

export const historyCsvHeaders = z
  .object({
    'Content-Disposition': z.string().meta({ example: 'attachment; filename="B0EXAMPLE1-JP-history.csv"' }),
    'X-RateLimit-Limit': z.string().meta({ description: 'Requests allowed in the window.' }),
    'X-RateLimit-Remaining': z.string().meta({ description: 'Requests left in the window.' }),
  })
  .partial();

export const historyCsvResponse: ZodOpenApiResponseObject = {
  description: 'Every history point of the range as CSV.',
  content: historyCsvContent,
  headers: historyCsvHeaders,
};

/** Resolves when the response can take more, or is gone. */
function writable(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Writes the chunks as the response takes them, the headers with the first: a source that fails
 * before it gives anything still leaves the error handler free to answer in JSON. A client that
 * leaves stops the reading.
 */
export async function streamText(res: Response, headers: Record<string, string>, chunks: AsyncIterable<string>): Promise<void> {
  let first = true;
  for await (const chunk of chunks) {
    if (res.destroyed) return;
    if (first) {
      res.set(headers);
      first = false;
    }
    if (!res.write(chunk)) await writable(res);
  }
  if (!res.destroyed) res.end();
}

export async function sendHistoryCsv(ctx: AppContext, res: Response, country: Country, asin: string, range: HistoryRange): Promise<void> {
  const cursor = await ctx.world.historyCursor(country, asin, range);
  if (!cursor) throw new NotFoundError('Nobody watches this ASIN in this country.');
  try {
    await streamText(
      res,
      {
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="${asin}-${country}-history.csv"`,
      },
      historyCsvChunks(cursor, ctx.config.timeZone),
    );
  } finally {
    await cursor.close();
  }
}
