import { describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { parseAppKey, generateAppKey } from '../../config/app-key.js';
import { generateToken, hashToken, openToken, sealToken, TOKEN_LENGTH } from '../../src/users/token.js';
import { SealedSecretError } from '../../src/core/errors.js';
import { sealV1 } from '../helpers/sealed-v1.js';

describe('API tokens', () => {
  it('are 60 alphanumeric characters and do not repeat', () => {
    const tokens = new Set(Array.from({ length: 200 }, generateToken));
    expect(tokens.size).toBe(200);
    for (const t of tokens) expect(t).toMatch(new RegExp(`^[A-Za-z0-9]{${TOKEN_LENGTH}}$`));
  });

  it('hash to hex SHA-256', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('are sealed to their account: another account, another key or a changed byte cannot open the copy', () => {
    const key = parseAppKey(generateAppKey())!;
    const token = generateToken();
    const owner = new Types.ObjectId();
    const sealed = sealToken(token, owner, key);
    expect(sealed).not.toContain(token);
    expect(sealed).toMatch(/^v2\./);
    expect(sealToken(token, owner, key)).not.toBe(sealed); // a fresh IV each time
    expect(openToken(sealed, owner, key)).toBe(token);
    expect(() => openToken(sealed, new Types.ObjectId(), key)).toThrow(SealedSecretError);
    expect(() => openToken(sealed, owner, parseAppKey(generateAppKey())!)).toThrow(SealedSecretError);
    expect(() =>
      openToken(
        sealed.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
        owner,
        key,
      ),
    ).toThrow(SealedSecretError);
  });

  it('copies sealed the old way still open, for any account (they were bound to none)', () => {
    const key = parseAppKey(generateAppKey())!;
    const token = generateToken();
    expect(openToken(sealV1(token, key), new Types.ObjectId(), key)).toBe(token);
  });
});
