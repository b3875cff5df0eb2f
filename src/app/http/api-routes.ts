import type { RouteFactory } from './app.js';
import { directoryRoutes } from './routes/directory.js';
import { accountApiRoutes } from './routes/account-api.js';
import { metricsRoutes } from './routes/metrics.js';
import { bullBoardRoutes } from './bull-board.js';
import { docsRoutes } from './routes/docs.js';
import { historyChartRoutes } from './routes/history-chart.js';
import { appPageRoutes } from './routes/app-page.js';
import { emailLinkRoutes } from './routes/email-links.js';
import { feedsRoutes } from './routes/feeds.js';

/** What the api role serves beyond version and health: the public directory, the account API, the deals feed, metrics, Bull Board, the API docs, the account page (/app) and the pages of e-mails' links. */
export const apiRoutes: readonly RouteFactory[] = [
  directoryRoutes,
  accountApiRoutes,
  feedsRoutes,
  historyChartRoutes,
  metricsRoutes,
  bullBoardRoutes,
  docsRoutes,
  appPageRoutes,
  emailLinkRoutes,
];
