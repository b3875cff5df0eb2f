/**
 * Forced-update latency under load. The issue measures it during the
 * throughput run, so this script runs the refresh benchmark (refresh.ts), whose update client calls
 * `/api/world/update` for 10 random ASINs once a second, and reports the update figures last.
 */
import { mainRefresh } from './refresh.js';

await mainRefresh('update');
