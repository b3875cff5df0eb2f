import mongoose from 'mongoose';

/**
 * Reads that a secondary of a replica set may answer: the world's list pages, which nobody reads
 * right after their own write (a forced update answers its products itself) and which are kept for
 * a second anyway. They may be up to 90 s behind the primary (the least maxStalenessSeconds the
 * driver allows), and fall back to the primary when no secondary is that fresh. On a standalone
 * server, and on the test stand-in, they read the one server. Reads that fill caches told of changes
 * (accounts, the directory) and single products stay on the primary: they must see the last write.
 */
const lagging = new mongoose.mongo.ReadPreference('secondaryPreferred', undefined, { maxStalenessSeconds: 90 });

/** Query options (`query.setOptions(LAGGING_READ)`): mongoose's types name a mode only, the driver takes the instance. */
export const LAGGING_READ = { readPreference: lagging as unknown as 'secondaryPreferred' };
