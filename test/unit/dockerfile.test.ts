import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The image installs its dependencies with install scripts off: a compromised or careless package
 * then runs nothing at build time, and mongodb-memory-server's postinstall does not fetch a mongod
 * the image never uses. The build itself is `tsc`, which needs no install script.
 */
describe('Dockerfile', () => {
  const text = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
  // One instruction per entry: continuation lines joined, comments left out.
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const installs = instructions
    .filter((l) => /^RUN\b/i.test(l))
    .flatMap((l) => l.split(/&&|;|\|\|/))
    .filter((cmd) => /\bnpm\s+(ci|install|i|add|isntall|clean-install|install-clean|it)\b/.test(cmd));

  it('installs in both stages', () => {
    expect(installs.length).toBeGreaterThanOrEqual(2);
  });

  it('runs every npm install with --ignore-scripts', () => {
    expect(installs.filter((cmd) => !/(^|\s)--ignore-scripts(\s|$|=true)/.test(cmd.trim()))).toEqual([]);
  });
});
