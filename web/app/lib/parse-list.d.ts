// Types of parse-list.js for the TypeScript tests that import it (the page itself is plain JS).

export type ProductType = 'asin' | 'ean' | 'browse';
export type Column = ProductType | 'any';

export const MAX_ENTRIES: number;
export function validEan13(code: string): boolean;
export function classify(raw: unknown, as?: Column): { type: ProductType; value: string } | { error: string };
export function parsePriority(cell: unknown, fallback: 0 | 1): 0 | 1 | null;
export function splitCsvLine(line: string): string[];
export function parseList(
  text: string,
  defaultPriority?: 0 | 1,
): {
  entries: { line: number; type: ProductType; value: string; priority: 0 | 1 | null }[];
  errors: { line: number; text: string; message: string }[];
  duplicates: number;
};
