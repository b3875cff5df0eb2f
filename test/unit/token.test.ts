import { describe, expect, it } from 'vitest';
import { parseAppKey, generateAppKey } from '../../config/app-key.js';
import { decryptToken, encryptToken, generateToken, hashToken, TOKEN_LENGTH } from '../../src/users/token.js';
import { TokenDecryptError } from '../../src/errors/index.js';

describe('API tokens', () => {
  it('are 60 alphanumeric characters and do not repeat', () => {
    const tokens = new Set(Array.from({ length: 200 }, generateToken));
    expect(tokens.size).toBe(200);
    for (const t of tokens) expect(t).toMatch(new RegExp(`^[A-Za-z0-9]{${TOKEN_LENGTH}}$`));
  });

  it('hash to hex SHA-256', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('encrypt and decrypt under APP_KEY; another key cannot read them', () => {
    const key = parseAppKey(generateAppKey())!;
    const token = generateToken();
    const sealed = encryptToken(token, key);
    expect(sealed).not.toContain(token);
    expect(encryptToken(token, key)).not.toBe(sealed); // a fresh IV each time
    expect(decryptToken(sealed, key)).toBe(token);
    expect(() => decryptToken(sealed, parseAppKey(generateAppKey())!)).toThrow(TokenDecryptError);
    expect(() =>
      decryptToken(
        sealed.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
        key,
      ),
    ).toThrow(TokenDecryptError);
  });
});
