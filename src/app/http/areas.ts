import type { RouteFactory } from './app.js';
import { directoryRoutes } from './routes/directory.js';
import { areaBRoutes } from './routes/area-b.js';
import { metricsRoutes } from './routes/metrics.js';
import { bullBoardRoutes } from './bull-board.js';
import { docsRoutes } from './routes/docs.js';

/** The areas the api role serves, beyond version and health. Each area issue adds its router here. */
export const areaRoutes: readonly RouteFactory[] = [directoryRoutes, areaBRoutes, metricsRoutes, bullBoardRoutes, docsRoutes];
