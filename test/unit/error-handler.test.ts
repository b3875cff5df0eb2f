import { Writable } from 'node:stream';
import express from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { errorHandler } from '../../src/app/http/error-handler.js';
import { createLogger } from '../../src/logger.js';

const silent = createLogger({ log: { level: 'silent', pretty: false } }, new Writable({ write: (_c, _e, done) => done() }));

/**
 * The error handler on its own, without the path guard in front of it (src/app/http/path-guard.ts): a
 * route parameter that does not decode, or any other decoding of client text that fails, is a 400
 * in the error shape, never a 500.
 */
describe('errorHandler', () => {
  const app = express();
  app.get('/thing/:id', (req, res) => void res.json({ id: req.params.id }));
  app.get('/decode', (req) => {
    decodeURIComponent(String(req.query.v));
  });
  app.use(errorHandler(silent));

  it.each(['/thing/%', '/thing/%E0%A4%A', '/thing/%C0%80', '/decode?v=%25E0'])('answers %s with 400 {message}', async (path) => {
    const res = await supertest(app).get(path);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'The request URL is not valid percent-encoding.' });
  });
});
