/* eslint-disable no-console -- silences the library's own console output while it starts */
import { EmbeddedUnavailableError } from '../core/errors.js';

export interface EmbeddedMongo {
  readonly uri: string;
  stop(): Promise<void>;
}

/**
 * MongoDB from mongodb-memory-server. It downloads a mongod binary on first use (or uses
 * MONGOMS_SYSTEM_BINARY); where neither is possible we stop with a line that says what to set.
 */
export async function startEmbeddedMongo(): Promise<EmbeddedMongo> {
  const { MongoMemoryServer } = await import('mongodb-memory-server');
  let server: InstanceType<typeof MongoMemoryServer>;
  // The library prints its own multi-line stack on failure; we say it in one line below instead.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    server = await MongoMemoryServer.create({ instance: { ip: '127.0.0.1' } });
  } catch (err) {
    const why = (err instanceof Error ? err.message.split('\n')[0]! : String(err)).replace(/,?\s*Details:\s*$/, '');
    throw new EmbeddedUnavailableError(
      `could not start the embedded MongoDB (mongodb-memory-server: ${why}); run one, e.g. ` +
        '`docker run -d -p 27017:27017 mongo:7` then ' +
        '`MONGODB_URI=mongodb://127.0.0.1:27017/shelfwatch APP_KEY=base64:$(openssl rand -base64 32) npm start` ' +
        '(or set MONGOMS_SYSTEM_BINARY to a local mongod, or use `docker compose up`)',
    );
  } finally {
    console.warn = warn;
  }
  return {
    uri: server.getUri(),
    async stop() {
      await server.stop({ doCleanup: true, force: false });
    },
  };
}
