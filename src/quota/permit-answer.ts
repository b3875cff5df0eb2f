import type { DaySpentReason } from '../core/errors.js';
import type { QuotaClass } from '../core/quota-classes.js';

/** What one ask of the permit script (TAKE_PERMIT, governor-scripts.ts) answered, as the governor reads it. */
export type TakeAnswer =
  | {
      kind: 'ok';
      cls: QuotaClass;
      delay: number;
      total: number;
      own: number;
      start: number;
      /** The reservation the caller confirms before it calls (CONFIRM_START), when the start was booked. */
      reservation?: string;
      /** The margin on top of 1/Q the start was paced at (ms). */
      margin: number;
      /** The country's own learnt margin (ms): `margin` unless its peers' was more. */
      learnt: number;
      /** The country's last calls were answered 429 (a run the next call that goes through ends). */
      run: boolean;
    }
  | { kind: 'wait'; ms: number; why: 'rate' | 'share' | 'priority' }
  | { kind: 'refused'; probeAt: number; reason: string }
  | { kind: 'day'; cls: QuotaClass; reason: DaySpentReason }
  | { kind: 'seed' };

/** The script's reply (strings: Lua numbers would lose their fractions); `id` is the reservation this ask would have. */
export function parseTakeAnswer(raw: unknown, id: string): TakeAnswer {
  const a = raw as string[];
  switch (a[0]) {
    case 'ok':
      return {
        kind: 'ok',
        cls: a[1] as QuotaClass,
        delay: Number(a[2]),
        total: Number(a[3]),
        own: Number(a[4]),
        start: Number(a[5]),
        ...(a[6] === '1' ? { reservation: id } : {}),
        margin: Number(a[7] ?? 0),
        learnt: Number(a[9] ?? 0),
        run: a[8] === '1',
      };
    case 'refused':
      return { kind: 'refused', probeAt: Number(a[1]), reason: String(a[2]) };
    case 'wait':
      return { kind: 'wait', ms: Number(a[1]), why: a[2] === 'share' ? 'share' : a[2] === 'priority' ? 'priority' : 'rate' };
    case 'day':
      return { kind: 'day', cls: a[1] as QuotaClass, reason: a[2] as DaySpentReason };
    default:
      return { kind: 'seed' };
  }
}
