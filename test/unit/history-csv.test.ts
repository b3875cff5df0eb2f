import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { csvField, csvRecord, HISTORY_CSV_COLUMNS, historyCsvChunks } from '../../src/catalog/history-csv.js';
import type { Point } from '../../src/catalog/history.js';
import { streamText } from '../../src/app/http/history-csv.js';
import { errorHandler } from '../../src/app/http/error-handler.js';
import { createLogger } from '../../src/logger.js';
import { until } from '../helpers/until.js';

const silent = createLogger({ log: { level: 'silent', pretty: false } }, new Writable({ write: (_c, _e, done) => done() }));

describe('csvField', () => {
  it.each([
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\rhere', '"cr\rhere"'],
    ['=1+1', "'=1+1"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@A1', "'@A1"],
    ['\tx', "'\tx"],
    ['\rx', `"'\rx"`],
    ['=A1,"B"', `"'=A1,""B"""`],
    ['a=b', 'a=b'],
    ['', ''],
  ])('writes the text %j as %j', (value, field) => {
    expect(csvField(value)).toBe(field);
  });

  it('writes numbers and booleans as they are, and null as an empty field', () => {
    expect(csvRecord([-5, 1.5, true, false, null, 'x'])).toBe('-5,1.5,true,false,,x\r\n');
  });
});

const point = (i: number): Point => ({
  at: new Date(Date.UTC(2026, 0, 1) + i * 60_000),
  price: i,
  currency: 'JPY',
  availability: 'in_stock',
  buybox: true,
  rank: null,
});

async function* pointsOf(n: number, pulled: { n: number }) {
  for (let i = 0; i < n; i++) {
    pulled.n++;
    yield point(i);
  }
}

describe('historyCsvChunks', () => {
  it('names the JSON fields, and reads the points a chunk at a time', async () => {
    expect(HISTORY_CSV_COLUMNS).toEqual(['at', 'price', 'currency', 'availability', 'buybox', 'rank']);
    const pulled = { n: 0 };
    const chunks = historyCsvChunks(pointsOf(2_000, pulled), 'UTC');
    const first = await chunks.next();
    // A chunk of about 16 KiB: a few hundred points read, not all of them.
    expect(pulled.n).toBeGreaterThan(100);
    expect(pulled.n).toBeLessThan(1_000);
    const rest: string[] = [];
    for await (const chunk of chunks) rest.push(chunk);
    const file = [first.value as string, ...rest].join('');
    const lines = file.split('\r\n');
    expect(lines[0]).toBe('at,price,currency,availability,buybox,rank');
    expect(lines[1]).toBe('2026-01-01 00:00:00,0,JPY,in_stock,true,');
    expect(lines).toHaveLength(2_002);
    expect(lines.at(-1)).toBe('');
  });
});

/** A source of 64 KiB chunks that counts what was taken from it and whether it was closed. */
function source(total: number) {
  const state = { pulled: 0, closed: false };
  async function* chunks() {
    try {
      for (let i = 0; i < total; i++) {
        state.pulled++;
        yield 'x'.repeat(64 * 1024);
      }
    } finally {
      state.closed = true;
    }
  }
  return { state, chunks };
}

describe('streamText', () => {
  it('takes from the source only as fast as the client reads, and stops when the client leaves', async () => {
    const { state, chunks } = source(10_000);
    let finished: Promise<void> | undefined;
    const app = express();
    app.get('/file', (_req, res) => {
      finished = streamText(res, { 'Content-Type': 'text/plain' }, chunks());
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/file' });
      req.end();
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      expect(res.statusCode).toBe(200);
      // The client does not read: the server's writes wait for 'drain' once the buffers are full.
      await until('the first chunks taken', async () => state.pulled > 1);
      await new Promise((r) => setTimeout(r, 300));
      const pulledWhilePaused = state.pulled;
      await new Promise((r) => setTimeout(r, 300));
      expect(state.pulled).toBe(pulledWhilePaused);
      expect(pulledWhilePaused).toBeLessThan(1_000);
      req.destroy();
      await until('the stream started', async () => finished !== undefined);
      await finished;
      expect(state.closed).toBe(true);
      expect(state.pulled).toBeLessThan(1_000);
    } finally {
      server.close();
    }
  });

  it('sends its headers with the first chunk, so a source that fails first leaves a JSON error', async () => {
    const app = express();
    app.get('/file', async (_req, res) => {
      // eslint-disable-next-line require-yield
      async function* failing(): AsyncGenerator<string> {
        throw new Error('no data');
      }
      await streamText(res, { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': 'attachment' }, failing());
    });
    app.use(errorHandler(silent));
    const res = await supertest(app).get('/file');
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.body).toEqual({ message: 'Server Error' });
  });
});
