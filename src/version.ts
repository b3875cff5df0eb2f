import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The running program's package.json, found by walking up: src/ and dist/src/ sit at different depths. */
function readOwnPackage(): { name: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'shelfwatch' && typeof pkg.version === 'string') return { name: pkg.name, version: pkg.version };
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json of shelfwatch not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const VERSION: string = readOwnPackage().version;
