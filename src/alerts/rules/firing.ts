import mongoose, { type Connection, type Types } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import type { Country } from '../../core/identifiers.js';
import type { Point, ProductChange } from '../../catalog/history.js';
import { withTimeout } from '../../db/mongo.js';
import { alertModel } from '../../models/alert.js';
import { historyPointModel } from '../../models/history-point.js';
import type { Alert } from './alert.js';
import { referencesFor } from './reference.js';
import { holdsNow, judge, rearms, sameState, stateOf, type ArmState } from './triggers.js';

/** An alert a change fired. */
export interface Fired {
  readonly change: ProductChange;
  readonly alert: Alert;
}

/**
 * What fires, and when: the active alerts on changed products judged against each change
 * (triggers.ts), their re-arming states kept. The reads have deadlines (they run in a refresh
 * batch); nothing is written before the changes' history points are.
 */
export class AlertFiring {
  constructor(private readonly conn: Connection) {}

  private get alerts() {
    return alertModel(this.conn);
  }

  /**
   * The alerts the changes fire, change after change in the batch's order (one query per country).
   * Re-arming alerts' states change as they are judged and are written back, once `after` resolves
   * (the changes' history points are written).
   */
  async fire(changes: readonly ProductChange[], after: Promise<void>): Promise<Fired[]> {
    const byCountry = new Map<ProductChange['country'], ProductChange[]>();
    for (const c of changes) byCountry.set(c.country, [...(byCountry.get(c.country) ?? []), c]);
    const fired: Fired[] = [];
    // Re-arming alerts' states, judged change after change in the batch's order; written back when changed.
    const states = new Map<string, { alert: Alert; from: ArmState; state: ArmState }>();
    for (const [country, list] of byCountry) {
      const alerts = await this.activeOn(country, [...new Set(list.map((c) => c.asin))]);
      const pairs = list.flatMap((change) => alerts.filter((a) => a.asin === change.asin).map((alert) => ({ change, alert })));
      const references = await this.referencesFor(pairs);
      for (const { change, alert } of pairs) {
        const hex = alert._id.toHexString();
        const held = states.get(hex) ?? { alert, from: stateOf(alert), state: stateOf(alert) };
        const judged = judge(alert, held.state, change, references.get(`${hex}.${change.key}`) ?? null);
        if (rearms(alert)) states.set(hex, { ...held, state: judged.state });
        if (judged.fires) fired.push({ change, alert });
      }
    }
    const changedStates = [...states.values()].filter((s) => !sameState(s.from, s.state));
    if (changedStates.length > 0) {
      await after;
      await this.saveStates(changedStates.map((s) => ({ id: s.alert._id, state: s.state })));
    }
    return fired;
  }

  /**
   * A new alert whose condition already holds on the product's current point (its last history
   * point, against the one before it) fires on that point, as a change of its own
   * (`<country>.<asin>.created.<alert id>`). Nothing when the product has no point yet, or the
   * alert is paused.
   */
  async fireOnCreate(alert: Alert): Promise<Fired | null> {
    if (alert.paused) return null;
    const [latest, previous] = await this.lastPoints(alert.country, alert.asin);
    if (!latest) return null;
    const change: ProductChange = {
      country: alert.country,
      asin: alert.asin,
      key: `${alert.country}.${alert.asin}.created.${alert._id.toHexString()}`,
      before: previous ?? null,
      after: latest,
    };
    const references = await this.referencesFor([{ change, alert }]);
    if (!holdsNow(alert, change, references.get(`${alert._id.toHexString()}.${change.key}`) ?? null)) return null;
    if (rearms(alert)) {
      await this.saveStates([{ id: alert._id, state: { armed: false, last_fired_at: latest.at, last_fired_key: change.key } }]);
    }
    return { change, alert };
  }

  /** The active alerts on these products of a country (one query per batch that changed something). */
  private activeOn(country: Country, asins: readonly string[]): Promise<Alert[]> {
    return this.alerts
      .find({ country, asin: mongoose.trusted({ $in: [...asins] }), disabled_at: null, paused: mongoose.trusted({ $ne: true }) })
      .sort({ _id: 1 })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
  }

  /**
   * The reference prices of these changes for the alerts that compare against one (reference.ts).
   * An at_creation alert made before its product had a price takes the first price it sees.
   */
  private async referencesFor(pairs: readonly { change: ProductChange; alert: Alert }[]): Promise<Map<string, number | null>> {
    for (const { change, alert } of pairs) {
      if (alert.reference !== 'at_creation' || (alert.reference_price ?? null) !== null || change.after.price === null) continue;
      const { price, currency } = change.after;
      await this.alerts
        .updateOne({ _id: alert._id, reference_price: null }, { $set: { reference_price: price, reference_currency: currency } })
        .maxTimeMS(DELIVERY_DB_TIMEOUT_MS);
      Object.assign(alert, { reference_price: price, reference_currency: currency });
    }
    return referencesFor(this.conn, pairs);
  }

  /** The product's last two history points, newest first (fewer when it has fewer). */
  private async lastPoints(country: Country, asin: string): Promise<Point[]> {
    const points = await historyPointModel(this.conn)
      .find({ country, asin })
      .sort({ at: -1 })
      .limit(2)
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
    return points.map((p) => ({
      at: p.at,
      price: p.price,
      currency: p.currency,
      availability: p.availability,
      buybox: p.buybox,
      rank: p.rank,
    }));
  }

  /** Re-arming alerts' states after a batch's changes (src/alerts/rules/triggers.ts). */
  private async saveStates(states: readonly { id: Types.ObjectId; state: ArmState }[]): Promise<void> {
    if (states.length === 0) return;
    await withTimeout(
      this.alerts
        .bulkWrite(
          states.map(({ id, state }) => ({
            updateOne: {
              filter: { _id: id },
              update: { $set: { armed: state.armed, last_fired_at: state.last_fired_at, last_fired_key: state.last_fired_key } },
            },
          })),
          { ordered: false },
        )
        .then(() => undefined),
      DELIVERY_DB_TIMEOUT_MS,
      'alert re-arming states',
    );
  }
}
