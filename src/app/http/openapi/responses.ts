import { z } from 'zod';
import type { $ZodType } from 'zod/v4/core';
import type { ZodOpenApiOperationObject, ZodOpenApiResponseObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { errorBodySchema, validationErrorBodySchema } from '../error-body.js';

/**
 * The pieces every operation of the document shares: JSON answers, the error answers of the one
 * error handler (src/app/http/error-handler.ts), the rate limiter's headers and the account API's security.
 */

export function json(description: string, schema: $ZodType, headers?: ZodOpenApiResponseObject['headers']): ZodOpenApiResponseObject {
  return { description, content: { 'application/json': { schema } }, ...(headers ? { headers } : {}) };
}

const retryAfter = z.string().meta({ description: 'Seconds to wait before trying again.', example: '30' });

/** express-rate-limit's headers, in the names Laravel's throttle uses. */
const limitHeaders = z.object({
  'X-RateLimit-Limit': z.string().meta({ description: 'Requests allowed in the window.' }),
  'X-RateLimit-Remaining': z.string().meta({ description: 'Requests left in the window.' }),
});

const etagHeader = z.object({
  ETag: z
    .string()
    .meta({ description: 'A weak entity tag of the body: send it in If-None-Match to be answered 304 while the answer is unchanged.' }),
});

/** A conditional GET whose If-None-Match names the answer it would get: headers, no body. */
export const notModified = {
  304: { id: 'NotModified', description: 'The answer is the one the ETag in If-None-Match names; no body is sent.' },
} as const satisfies ZodOpenApiResponsesObject;

const ERRORS = {
  400: { id: 'BadRequest', ...json('The request could not be read (malformed JSON, a broken path).', errorBodySchema) },
  401: { id: 'Unauthenticated', ...json('No API token, or an unknown or over-long one.', errorBodySchema) },
  404: { id: 'NotFound', ...json('No such resource.', errorBodySchema) },
  405: {
    id: 'MethodNotAllowed',
    ...json('The path exists, the method does not; `Allow` lists those that do.', errorBodySchema, z.object({ Allow: z.string() })),
  },
  409: { id: 'Conflict', ...json('The resource is not in a state this request applies to; nothing was changed.', errorBodySchema) },
  413: { id: 'TooLarge', ...json('The body is over BODY_LIMIT or has too many parameters.', errorBodySchema) },
  415: { id: 'UnsupportedEncoding', ...json("The body's encoding or charset is not supported.", errorBodySchema) },
  422: { id: 'Invalid', ...json('The input failed validation; `errors` names each field.', validationErrorBodySchema) },
  429: {
    id: 'TooManyRequests',
    ...json(
      'A rate limit, an account cap or the quota day is spent; nothing was changed.',
      errorBodySchema,
      limitHeaders.partial().extend({
        'Retry-After': retryAfter,
        'X-RateLimit-Reset': z.string().optional().meta({ description: 'Unix time when the window renews.' }),
      }),
    ),
  },
  502: {
    id: 'UpstreamFailed',
    ...json('The upstream could not refresh the products; the message gives the request id, under which the log has why.', errorBodySchema),
  },
  503: {
    id: 'Unavailable',
    ...json(
      'MongoDB or Redis is away, the service is shutting down, or (for a forced update) the upstream is refusing the country and its calls are stopped until a probe gets through; try again after Retry-After.',
      errorBodySchema,
      z.object({ 'Retry-After': retryAfter }),
    ),
  },
} as const satisfies Record<number, ZodOpenApiResponseObject>;

export type ErrorStatus = keyof typeof ERRORS;

/** Any request may carry a body, and every body is read before routing: these can come from any path. */
const UNREADABLE: readonly ErrorStatus[] = [400, 413, 415];

/** The error answers an operation can give: its own, an unreadable body, and 503 (a dependency away). */
export function errors(...statuses: ErrorStatus[]): ZodOpenApiResponsesObject {
  return unreadable(...statuses, 503);
}

/** `errors` for operations that answer without MongoDB or Redis, or answer their absence themselves. */
export function unreadable(...statuses: ErrorStatus[]): ZodOpenApiResponsesObject {
  const out: ZodOpenApiResponsesObject = {};
  for (const status of [...new Set<ErrorStatus>([...statuses, ...UNREADABLE])].sort((a, b) => a - b)) out[`${status}`] = ERRORS[status];
  return out;
}

/** A successful answer with the rate limiter's headers (every account API and directory answer carries them). */
export function limited(description: string, schema: $ZodType): ZodOpenApiResponseObject {
  return json(description, schema, limitHeaders.extend(etagHeader.shape).partial());
}

/** The account API: the token as a Bearer header or as `api_token` in the query (or a POST body, see each body). */
export const ACCOUNT_API_SECURITY: ZodOpenApiOperationObject['security'] = [{ bearerToken: [] }, { queryToken: [] }];

export const SECURITY_SCHEMES = {
  bearerToken: {
    type: 'http',
    scheme: 'bearer',
    description: "The account's API token (at most 60 characters): `Authorization: Bearer <token>`.",
  },
  queryToken: {
    type: 'apiKey',
    in: 'query',
    name: 'api_token',
    description: 'The same token as a query parameter; POST bodies may carry it as `api_token` too.',
  },
} as const;

/** `api_token` in a POST body: the contract's third way of giving the token. */
export const bodyToken = {
  api_token: z.string().max(60).optional().meta({ description: 'The API token, when it is not in the header or the query.' }),
};

/** The request body of an action that takes no input: at most the token, as JSON or a form. */
export const tokenOnlyBody = {
  required: false,
  content: {
    'application/json': { schema: z.object(bodyToken) },
    'application/x-www-form-urlencoded': { schema: z.object(bodyToken) },
  },
};
