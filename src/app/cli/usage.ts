/** Wrong command or flag: the caller gets the usage on stderr and exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `usage: shelfwatch <command> [flags]

roles (long-running; stop with SIGTERM or SIGINT):
  all                     every role in one process (the default of npm start)
  api                     the HTTP API: version, directory, watchlist, catalogue, health,
                          metrics, Bull Board
  worker                  BullMQ workers: call the upstream within each country's quota and
                          write the catalogue (any number, on any number of machines)
  scheduler               node-cron ticks that plan due refreshes and browse crawls
                          (safe to run more than one)
  simulator               a local stand-in for Amazon's Creators API (token endpoints, getItems,
                          searchItems, getBrowseNodes; quota and faults; GET /__stats)

admin commands:
  users:create --name N --email E [--title T] [--avatar URL] [--url URL] [--image URL]
               [--tags a,b] [--message-file FILE]
                          create a user; prints {"id":"…","token":"…"}
  users:token --email E [--rotate]
                          print the user's API token (--rotate: issue a new one first)
  users:weight --email E --weight W
                          the account's weight in fair sharing (0.01–1000, default 1): its
                          share of forced updates, imports, crawls and webhook deliveries
                          against other backlogged accounts
  posts:create --email OWNER --title T [--url URL] [--image URL] [--message-file FILE]
                          create a post owned by that user; prints {"id":"…"}
  seed --users N --posts M
                          deterministic demo users and posts (English and Japanese);
                          running it again updates the same records
  queues:status           per country: paused or not, jobs by state, products due in MongoDB,
                          upstream calls today against the quota; one JSON line
  queues:resume --country CC
                          resume a country queue that a fatal upstream error paused
  alerts:list --email E   the user's alerts, newest first: one JSON line each (state, last
                          delivery)
  watch:sync              create and schedule the products of every watched ASIN in every
                          configured country (after adding a country to COUNTRIES)
  db:sync-indexes         build the indexes of every collection (a deploy step in production)
  key:generate            print a new random APP_KEY
  openapi                 print the OpenAPI 3.1 document that GET /openapi.json serves

  help, --help            this text
  version, --version      the program's version

Configuration comes from environment variables; see docs/configuration.md.`;
