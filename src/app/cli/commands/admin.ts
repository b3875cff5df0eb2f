import { generateAppKey } from '../../../../config/app-key.js';
import { VERSION } from '../../../version.js';
import { adminConfig, withAdminContext } from '../runtime.js';
import { migrateAlertIdentities } from '../../../alerts/rules/migrate.js';
import { rekeyProductSearch } from '../../../catalog/search-rekey.js';
import { backfillDeals } from '../../../catalog/deals-backfill.js';
import type { Command } from './types.js';

export const keyGenerateCommand: Command = {
  name: 'key:generate',
  options: {},
  async run() {
    process.stdout.write(generateAppKey() + '\n');
    return 0;
  },
};

export const versionCommand: Command = {
  name: 'version',
  options: {},
  async run() {
    process.stdout.write(VERSION + '\n');
    return 0;
  },
};

/** Builds what is missing and drops what the schemas no longer declare; prints what it did. */
export const syncIndexesCommand: Command = {
  name: 'db:sync-indexes',
  options: {},
  async run(_flags, env) {
    return withAdminContext(env, async (ctx) => {
      const result: Record<string, { dropped: string[] }> = {};
      // Alerts stored while they were one per kind get what the new unique indexes need first.
      await migrateAlertIdentities(ctx.mongo, ctx.logger);
      // Products keyed before word prefixes get them before their old index goes.
      await rekeyProductSearch(ctx.mongo, ctx.logger);
      // Products written before the deals feed get its figures before its indexes are built.
      await backfillDeals(ctx.mongo, ctx.logger);
      for (const model of Object.values(ctx.mongo.models)) {
        const dropped = await model.syncIndexes();
        result[model.collection.collectionName] = { dropped };
      }
      process.stdout.write(JSON.stringify(result) + '\n');
      return 0;
    });
  },
};

/** The OpenAPI document that `GET /openapi.json` serves, for this configuration. */
export const openapiCommand: Command = {
  name: 'openapi',
  options: {},
  async run(_flags, env) {
    // The document names every route: only this command loads them all.
    const { buildOpenApiDocument } = await import('../../http/openapi/document.js');
    process.stdout.write(JSON.stringify(buildOpenApiDocument(adminConfig(env)), null, 2) + '\n');
    return 0;
  },
};
