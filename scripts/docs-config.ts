/** `npm run docs:config`: writes docs/configuration.md from the configuration schemas. */
import { writeFileSync } from 'node:fs';
import { renderConfigReference, undescribed } from './config-reference.js';

const missing = undescribed();
if (missing.length) {
  process.stderr.write(`these variables have no description in their schema (.meta({ description })): ${missing.join(', ')}\n`);
  process.exit(1);
}
const target = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(target, renderConfigReference());
process.stdout.write(`wrote ${target.pathname}\n`);
