/**
 * What the simulator served, for GET /__stats: per country and operation, every call that named a
 * known marketplace (refused ones included); `errors` are answers other than 2xx and 429.
 */
import type { Country } from '../core/identifiers.js';

export interface OperationStats {
  calls: number;
  items: number;
  throttled: number;
  errors: number;
}

export interface StatsSnapshot {
  readonly since: string;
  readonly tokens: { issued: number; refused: number };
  readonly countries: Partial<Record<Country, Record<string, OperationStats>>>;
}

export class SimulatorStats {
  readonly #since = new Date().toISOString();
  readonly #tokens = { issued: 0, refused: 0 };
  readonly #countries: Partial<Record<Country, Record<string, OperationStats>>> = {};

  #entry(country: Country, op: string): OperationStats {
    const c = (this.#countries[country] ??= {});
    return (c[op] ??= { calls: 0, items: 0, throttled: 0, errors: 0 });
  }

  call(country: Country, op: string): void {
    this.#entry(country, op).calls++;
  }
  items(country: Country, op: string, n: number): void {
    this.#entry(country, op).items += n;
  }
  throttled(country: Country, op: string): void {
    this.#entry(country, op).throttled++;
  }
  error(country: Country, op: string): void {
    this.#entry(country, op).errors++;
  }
  token(issued: boolean): void {
    if (issued) this.#tokens.issued++;
    else this.#tokens.refused++;
  }

  snapshot(): StatsSnapshot {
    return structuredClone({ since: this.#since, tokens: this.#tokens, countries: this.#countries });
  }
}
