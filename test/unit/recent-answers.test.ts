import { describe, expect, it } from 'vitest';
import { RecentAnswers, type KeptAnswer } from '../../src/app/http/kept-answer.js';

const answer = (text: string): KeptAnswer => ({ body: Buffer.from(text), etag: undefined });

describe('RecentAnswers', () => {
  it('sends a kept answer within its TTL and makes it again after', async () => {
    // lru-cache reads a start time of 0 as none: the clock starts later.
    const clock = { t: 10_000, now: () => clock.t };
    const recent = new RecentAnswers(1_000, { clock });
    let made = 0;
    const make = () => Promise.resolve(answer(`page ${++made}`));
    expect((await recent.get('/a', make)).body.toString()).toBe('page 1');
    clock.t = 10_999;
    expect((await recent.get('/a', make)).body.toString()).toBe('page 1');
    clock.t = 11_001;
    expect((await recent.get('/a', make)).body.toString()).toBe('page 2');
  });

  it('drops expired answers that are not asked for again, so distinct requests do not fill it', async () => {
    // lru-cache reads a start time of 0 as none: the clock starts later.
    const clock = { t: 10_000, now: () => clock.t };
    const recent = new RecentAnswers(1_000, { clock });
    for (let i = 0; i < 50; i++) await recent.get(`/page/${i}`, () => Promise.resolve(answer(`p${i}`)));
    expect(recent.size).toBe(50);
    clock.t = 11_500;
    await recent.get('/page/new', () => Promise.resolve(answer('new')));
    expect(recent.size).toBe(1);
  });

  it('answers a request whose answer was still being made when the rest expired', async () => {
    const clock = { t: 10_000, now: () => clock.t };
    const recent = new RecentAnswers(1_000, { clock });
    await recent.get('/slow', () => Promise.resolve(answer('old')));
    clock.t = 11_001;
    let finish!: (a: KeptAnswer) => void;
    const slow = recent.get('/slow', () => new Promise<KeptAnswer>((resolve) => (finish = resolve)));
    // Another request, past another TTL, drops what has expired while the slow one is made.
    clock.t = 12_100;
    await recent.get('/other', () => Promise.resolve(answer('other')));
    finish(answer('new'));
    expect((await slow).body.toString()).toBe('new');
  });

  it('keeps nothing with a TTL of 0', async () => {
    const recent = new RecentAnswers(0);
    let made = 0;
    const make = () => Promise.resolve(answer(`page ${++made}`));
    await recent.get('/a', make);
    expect((await recent.get('/a', make)).body.toString()).toBe('page 2');
    expect(recent.size).toBe(0);
  });
});
