/**
 * What operators reach besides the API: Bull Board's login and the metrics port of worker and
 * scheduler roles. Parsed by loadConfig (env.ts).
 */
import { z } from 'zod';
import { bool, int } from './parsers.js';

export const opsEnvSchema = z.object({
  BULL_BOARD_USER: z.string().min(1).optional().meta({
    description:
      'The HTTP Basic user of Bull Board at `/admin/queues`; set with `BULL_BOARD_PASSWORD`, without both the route does not exist.',
    unset: 'board off',
  }),
  BULL_BOARD_PASSWORD: z
    .string()
    .min(12, 'must be at least 12 characters')
    .optional()
    .meta({ description: "Bull Board's password (at least 12 characters).", unset: 'board off' }),
  BULL_BOARD_READONLY: bool.default(true).meta({
    description:
      "`false` enables the board's retry and remove buttons (browsers resend Basic credentials by themselves: mind cross-site requests).",
  }),
  METRICS_PORT: int(0, 65535).optional().meta({
    description: 'Every role serves `/metrics`, `/healthz` and `/readyz` on this port; the api then serves `/metrics` only there.',
    unset: 'the api serves `/metrics` on its own port',
  }),
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional().meta({
    description:
      "At least 32 characters: every `/metrics` then needs `Authorization: Bearer <METRICS_TOKEN>`; with neither it nor `METRICS_PORT`, only clients on the api's own host get `/metrics`.",
    unset: 'no token',
  }),
});

/** Bull Board on the api's port; off unless both user and password are set. */
export interface BoardConfig {
  readonly user: string;
  readonly password: string;
  readonly readOnly: boolean;
}

export interface MetricsConfig {
  /** Worker and scheduler roles serve /metrics, /healthz and /readyz here when set. */
  readonly port: number | undefined;
  /** When set, /metrics answers only `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
}

export function buildOpsConfig(env: z.infer<typeof opsEnvSchema>): {
  config?: { board: BoardConfig | undefined; metrics: MetricsConfig };
  problems: string[];
} {
  if ((env.BULL_BOARD_USER === undefined) !== (env.BULL_BOARD_PASSWORD === undefined)) {
    return { problems: ['BULL_BOARD_USER and BULL_BOARD_PASSWORD must be set together (or neither, to turn Bull Board off)'] };
  }
  return {
    problems: [],
    config: {
      board:
        env.BULL_BOARD_USER && env.BULL_BOARD_PASSWORD
          ? Object.freeze({ user: env.BULL_BOARD_USER, password: env.BULL_BOARD_PASSWORD, readOnly: env.BULL_BOARD_READONLY })
          : undefined,
      metrics: Object.freeze({ port: env.METRICS_PORT, token: env.METRICS_TOKEN }),
    },
  };
}
