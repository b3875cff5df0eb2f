import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { until } from '../helpers/until.js';
import { userModel } from '../../src/models/user.js';

let t: TestContext;
let token: string;
let token2: string;
beforeAll(async () => {
  t = await createTestContext({}, { commandEvents: true });
  ({ token } = await t.ctx.users.create({ name: 'Auth User', email: 'auth@example.com' }));
  ({ token: token2 } = await t.ctx.users.create({ name: 'Other', email: 'other@example.com' }));
});
afterAll(async () => {
  await t?.close();
});

describe('account API authentication', () => {
  it('accepts the token as a Bearer header', async () => {
    const res = await t.http.get('/api/me').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe('auth@example.com');
    expect(res.body.data.api_token).toBe(token);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('accepts api_token in the query of a GET', async () => {
    const res = await t.http.get('/api/me').query({ api_token: token });
    expect(res.status).toBe(200);
    expect(res.body.data.name).toBe('Auth User');
  });

  it('accepts api_token in a JSON body and in a form body of a POST', async () => {
    const json = await t.http.post('/api/watch/browse').send({ api_token: token, browse: '2351649051' });
    expect(json.status).toBe(201);
    const form = await t.http.post('/api/watch/browse').type('form').send(`api_token=${token}&browse=2351649051`);
    expect(form.status).toBe(200);
  });

  it.each([
    ['no token', {}],
    ['an unknown token', { Authorization: 'Bearer ' + 'x'.repeat(60) }],
    ['a token over 60 characters', { Authorization: 'Bearer ' + 'y'.repeat(61) }],
    ['an empty bearer', { Authorization: 'Bearer ' }],
    ['basic auth', { Authorization: 'Basic dXNlcjpwYXNz' }],
  ])('answers 401 {"message":"Unauthenticated."} for %s', async (_name, headers) => {
    for (const req of [
      t.http.get('/api/me'),
      t.http.post('/api/watch/asin').send({ asin: 'B000000001' }),
      t.http.delete('/api/watch/asin/B000000001'),
    ]) {
      const res = await req.set(headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    }
  });

  it('answers 401 for a repeated or object api_token parameter', async () => {
    expect((await t.http.get(`/api/me?api_token=${token}&api_token=${token}`)).status).toBe(401);
    expect((await t.http.post('/api/watch/asin').send({ api_token: { $ne: '' }, asin: 'B000000001' })).status).toBe(401);
  });

  it('keeps users apart: a token sees only its own account', async () => {
    const res = await t.http.get('/api/me').set('Authorization', `Bearer ${token2}`);
    expect(res.body.data.email).toBe('other@example.com');
  });

  it('POST /api/me/token issues a new token and the old one stops working at once', async () => {
    const { token: old } = await t.ctx.users.create({ name: 'Rotating', email: 'rotate@example.com' });
    const res = await t.http.post('/api/me/token').set('Authorization', `Bearer ${old}`);
    expect(res.status).toBe(200);
    const fresh = res.body.data.api_token as string;
    expect(fresh).toMatch(/^[A-Za-z0-9]{60}$/);
    expect(fresh).not.toBe(old);
    expect((await t.http.get('/api/me').set('Authorization', `Bearer ${old}`)).status).toBe(401);
    expect((await t.http.get('/api/me').set('Authorization', `Bearer ${fresh}`)).status).toBe(200);
  });

  it("reads a token's account once, keeps it while that account is unchanged, and reads it again after a change to it", async () => {
    const lookups: unknown[] = [];
    const client = t.ctx.mongo.getClient();
    const onStarted = (e: CommandStartedEvent) => {
      const filter = (e.command as { filter?: Record<string, unknown> }).filter;
      if (e.commandName === 'find' && filter && 'token_hash' in filter) lookups.push(filter);
    };
    // Accounts are kept once this process hears of changes; until then (and when the subscription
    // comes up, which drops all kept) each is read. On a cluster the subscription takes longer.
    t.ctx.notices.listen();
    await until('change notices live', async () => t.ctx.notices.live, 10_000, 20);
    client.on('commandStarted', onStarted);
    try {
      // The write is told at once in this process and again when its notice comes back from Redis
      // (later on a cluster): counting starts after the echo, which also drops what was kept.
      let told = 0;
      const stop = t.ctx.notices.onChange((n) => void (n !== 'all' && n.topic === 'users' && told++));
      const { user: me, token: mine } = await t.ctx.users.create({ name: 'Kept', email: 'kept@example.com' });
      await until('the write’s notice back from Redis', async () => told >= 2, 10_000, 5);
      stop();
      const heard: string[] = [];
      const stopHearing = t.ctx.notices.onChange((n) => void heard.push(`${JSON.stringify(n)} after ${lookups.length} lookups`));
      const ask = () => t.http.get('/api/watch').set('Authorization', `Bearer ${mine}`).expect(200);
      await ask();
      await ask();
      await ask();
      // Read again only after a notice: on a cluster a PUBLISH goes out through any node, so an
      // earlier write's echo may come after this one's and drop what was kept once more.
      expect(lookups.length, `notices meanwhile: ${heard.join('; ')}`).toBeLessThanOrEqual(1 + heard.length);
      stopHearing();
      const kept = lookups.length;
      // Each write below is told here at once and again when its notice comes back from Redis:
      // asking after both counts what the notices dropped, not when the echo happened to come.
      const settled = async (write: () => Promise<unknown>) => {
        let heardNow = 0;
        const stopCounting = t.ctx.notices.onChange(() => void heardNow++);
        await write();
        await until('the notice back from Redis', async () => heardNow >= 2, 10_000, 5);
        stopCounting();
      };
      // Writes to other accounts keep it: a new user, another account's rotated token.
      const { user: another } = await t.ctx.users.create({ name: 'Another', email: 'another@example.com' });
      await settled(() => t.ctx.users.rotateToken(another._id));
      await ask();
      expect(lookups).toHaveLength(kept);
      // A write to this account drops it; so does one that names no account.
      const users = userModel(t.ctx.mongo);
      await settled(() => users.updateOne({ _id: me._id }, { $set: { title: 'changed' } }));
      await ask();
      await ask();
      expect(lookups).toHaveLength(kept + 1);
      await settled(() => users.updateMany({ email: 'nobody@example.com' }, { $set: { title: 'x' } }));
      await ask();
      await ask();
      expect(lookups).toHaveLength(kept + 2);
      // Unknown tokens are never kept: each is looked up.
      for (let i = 0; i < 3; i++)
        await t.http
          .get('/api/watch')
          .set('Authorization', `Bearer ${'u'.repeat(60)}`)
          .expect(401);
      expect(lookups).toHaveLength(kept + 5);
    } finally {
      client.off('commandStarted', onStarted);
    }
  });

  it('never writes a token to the log', async () => {
    await t.http.get(`/api/me?api_token=${token}`);
    await t.http.post('/api/watch/browse').send({ api_token: token2, browse: '1' });
    expect(t.logs.lines.length).toBeGreaterThan(0);
    expect(t.logs.text).not.toContain(token);
    expect(t.logs.text).not.toContain(token2);
  });
});
