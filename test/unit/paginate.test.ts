import { describe, expect, it } from 'vitest';
import { paginate, parsePageQuery } from '../../src/app/http/paginate.js';
import { ValidationError } from '../../src/core/errors.js';

const P = 'http://host/api/items';
const items = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

// Laravel's worked values: per_page 15, total 35, so last_page 3.
describe('paginate: the four Laravel cases', () => {
  it('first page', () => {
    const r = paginate({ items: items(15), total: 35, page: 1, perPage: 15, path: P });
    expect(r.links).toEqual({ first: `${P}?page=1`, last: `${P}?page=3`, prev: null, next: `${P}?page=2` });
    expect(r.meta).toMatchObject({ current_page: 1, from: 1, to: 15, last_page: 3, per_page: 15, total: 35, path: P });
    expect(r.meta.links.filter((l) => l.active).map((l) => l.label)).toEqual(['1']);
    expect(Object.keys(r)).toEqual(['data', 'links', 'meta']);
    expect(Object.keys(r.meta)).toEqual(['current_page', 'from', 'last_page', 'links', 'path', 'per_page', 'to', 'total']);
  });

  it('last page', () => {
    const r = paginate({ items: items(5), total: 35, page: 3, perPage: 15, path: P });
    expect(r.links).toEqual({ first: `${P}?page=1`, last: `${P}?page=3`, prev: `${P}?page=2`, next: null });
    expect(r.meta).toMatchObject({ current_page: 3, from: 31, to: 35, last_page: 3 });
    expect(r.meta.links.filter((l) => l.active).map((l) => l.label)).toEqual(['3']);
  });

  it('beyond the last page: empty, not clamped, prev one page back', () => {
    const r = paginate({ items: [], total: 35, page: 5, perPage: 15, path: P });
    expect(r.data).toEqual([]);
    expect(r.links).toEqual({ first: `${P}?page=1`, last: `${P}?page=3`, prev: `${P}?page=4`, next: null });
    expect(r.meta).toMatchObject({ current_page: 5, from: null, to: null, last_page: 3 });
    expect(r.meta.links.some((l) => l.active)).toBe(false);
  });

  it('empty collection: last_page 1, from/to null, no prev/next', () => {
    const r = paginate({ items: [], total: 0, page: 1, perPage: 15, path: P });
    expect(r.links).toEqual({ first: `${P}?page=1`, last: `${P}?page=1`, prev: null, next: null });
    expect(r.meta).toMatchObject({ current_page: 1, from: null, to: null, last_page: 1, total: 0 });
    expect(r.meta.links).toEqual([
      { url: null, label: '&laquo; Previous', active: false },
      { url: `${P}?page=1`, label: '1', active: true },
      { url: null, label: 'Next &raquo;', active: false },
    ]);
  });
});

describe('paginate: links and the page window', () => {
  it('keeps the other parameters, page last, encoded as PHP rawurlencode does', () => {
    const r = paginate({
      items: items(2),
      total: 10,
      page: 2,
      perPage: 2,
      path: P,
      query: { q: "a b&c!'*", limit: '2', page: '9', tag: ['x', 'y'] },
    });
    expect(r.links.next).toBe(`${P}?q=a%20b%26c%21%27%2A&limit=2&tag=x&tag=y&page=3`);
    expect(r.links.prev).toBe(`${P}?q=a%20b%26c%21%27%2A&limit=2&tag=x&tag=y&page=1`);
  });

  it('lists every page below 14 pages and windows from 14 on, like UrlWindow', () => {
    const labels = (page: number, last: number): string[] =>
      paginate({ items: items(1), total: last, page, perPage: 1, path: P })
        .meta.links.slice(1, -1)
        .map((l) => l.label);
    expect(labels(1, 13)).toEqual(Array.from({ length: 13 }, (_, i) => String(i + 1)));
    expect(labels(1, 20)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '...', '19', '20']);
    expect(labels(10, 20)).toEqual(['1', '2', '...', '7', '8', '9', '10', '11', '12', '13', '...', '19', '20']);
    expect(labels(18, 20)).toEqual(['1', '2', '...', '11', '12', '13', '14', '15', '16', '17', '18', '19', '20']);
    const gap = paginate({ items: items(1), total: 20, page: 1, perPage: 1, path: P }).meta.links[11];
    expect(gap).toEqual({ url: null, label: '...', active: false });
  });
});

describe('parsePageQuery', () => {
  const opts = { defaultLimit: 20, maxLimit: 100 };

  it('defaults, and accepts integers in range', () => {
    expect(parsePageQuery({}, opts)).toEqual({ page: 1, limit: 20 });
    expect(parsePageQuery({ page: '3', limit: '100' }, opts)).toEqual({ page: 3, limit: 100 });
    expect(parsePageQuery({ page: '', limit: '' }, opts)).toEqual({ page: 1, limit: 20 });
    expect(parsePageQuery({}, { defaultLimit: 50, maxLimit: 100 })).toEqual({ page: 1, limit: 50 });
  });

  it.each([
    ['0', 'The limit field must be at least 1.'],
    ['101', 'The limit field must not be greater than 100.'],
    ['-1', 'The limit field must be at least 1.'],
    ['1.5', 'The limit field must be an integer.'],
    ['abc', 'The limit field must be an integer.'],
    [['5', '6'], 'The limit field must be an integer.'],
  ])('limit=%j is a 422: %s', (limit, message) => {
    const err = (() => {
      try {
        parsePageQuery({ limit }, opts);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).status).toBe(422);
    expect((err as ValidationError).errors).toEqual({ limit: [message] });
  });

  it.each([['0'], ['-1'], ['1.5'], ['abc'], [['1', '2']]])('page=%j is a 422 on page', (page) => {
    expect(() => parsePageQuery({ page }, opts)).toThrow(ValidationError);
    try {
      parsePageQuery({ page }, opts);
    } catch (e) {
      expect(Object.keys((e as ValidationError).errors)).toEqual(['page']);
    }
  });
});
