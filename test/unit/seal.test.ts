import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { generateAppKey, parseAppKey, purposeKey } from '../../config/app-key.js';
import { isCurrentSeal, openSealed, seal, type SealedPlace } from '../../src/secrets/seal.js';
import { SealedSecretError } from '../../src/core/errors.js';
import { sealV1 } from '../helpers/sealed-v1.js';

const key = parseAppKey(generateAppKey())!;
const place: SealedPlace = { collection: 'webhook_endpoints', id: new Types.ObjectId(), field: 'target_sealed' };
const URL_TEXT = 'https://hooks.slack.com/services/T000/B000/XyZzY';
const b64 = (s: string) => Buffer.from(s, 'base64url');

describe('sealed secrets', () => {
  it('are AES-256-GCM with a 12-byte IV and a 16-byte tag, marked v2', () => {
    const sealed = seal(key, 'chat-url', place, URL_TEXT);
    const [version, iv, tag, data] = sealed.split('.');
    expect(version).toBe('v2');
    expect(b64(iv!)).toHaveLength(12);
    expect(b64(tag!)).toHaveLength(16);
    expect(b64(data!)).toHaveLength(Buffer.byteLength(URL_TEXT));
    expect(isCurrentSeal(sealed)).toBe(true);
    expect(openSealed(key, 'chat-url', place, sealed)).toBe(URL_TEXT);
  });

  it('open only at their record, field and collection, for their purpose, under their APP_KEY', () => {
    const sealed = seal(key, 'chat-url', place, URL_TEXT);
    const elsewhere: SealedPlace[] = [
      { ...place, id: new Types.ObjectId() },
      { ...place, field: 'secret_sealed' },
      { ...place, collection: 'alerts' },
    ];
    for (const p of elsewhere) expect(() => openSealed(key, 'chat-url', p, sealed)).toThrow(SealedSecretError);
    expect(() => openSealed(key, 'webhook-secret', place, sealed)).toThrow(SealedSecretError);
    expect(() => openSealed(parseAppKey(generateAppKey())!, 'chat-url', place, sealed)).toThrow(SealedSecretError);
  });

  it('refuse a shortened tag, a changed byte and what is not a sealed value', () => {
    const sealed = seal(key, 'chat-url', place, URL_TEXT);
    const [v, iv, tag, data] = sealed.split('.');
    const short = [v, iv, b64(tag!).subarray(0, 4).toString('base64url'), data].join('.');
    expect(() => openSealed(key, 'chat-url', place, short)).toThrow(SealedSecretError);
    const flipped = [v, iv, tag, Buffer.from(b64(data!).map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64url')].join('.');
    expect(() => openSealed(key, 'chat-url', place, flipped)).toThrow(SealedSecretError);
    for (const junk of ['', 'v3.a.b.c', 'v2.a.b', `${sealed}.x`, URL_TEXT]) {
      expect(() => openSealed(key, 'chat-url', place, junk)).toThrow(SealedSecretError);
    }
  });

  it('a v1 value of before opens anywhere, but not with a shortened tag', () => {
    const old = sealV1(URL_TEXT, key);
    expect(isCurrentSeal(old)).toBe(false);
    expect(openSealed(key, 'chat-url', place, old)).toBe(URL_TEXT);
    // A 4-byte tag made with the real key would pass a GCM check that accepts short tags.
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 4 });
    const data = Buffer.concat([cipher.update(URL_TEXT, 'utf8'), cipher.final()]);
    const truncated = ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
    expect(() => openSealed(key, 'chat-url', place, truncated)).toThrow(SealedSecretError);
  });

  it('each purpose has its own key, none of them APP_KEY', () => {
    const keys = ['api-token', 'webhook-secret', 'chat-url'].map((p) => purposeKey(key, p).toString('hex'));
    expect(new Set([...keys, key.toString('hex')]).size).toBe(4);
    expect(purposeKey(key, 'chat-url')).toHaveLength(32);
    expect(purposeKey(key, 'chat-url')).toBe(purposeKey(key, 'chat-url'));
  });
});
