/**
 * Who a permit is for. Scheduled work (planned refreshes, browse crawls) has the quota's pace and
 * the day less a reserve; on-demand work (forced updates, EAN resolves), which a client waits for,
 * goes first but has at most ON_DEMAND_SHARE of the pace while scheduled work waits and of the day.
 */
export type Lane = 'scheduled' | 'ondemand';
