import type { ErrorRequestHandler, RequestHandler } from 'express';
import mongoose from 'mongoose';
import { isRedisUnavailable } from '../../db/redis.js';
import { MAX_TIME_MS_EXPIRED } from '../../db/mongo.js';
import { HttpError, MalformedPathError, NotFoundError, ServiceUnavailableError, ValidationError } from '../../core/errors.js';
import type { Logger } from '../../logger.js';
import type { ErrorBody } from './error-body.js';

/** Errors of body-parser carry `type` and `status`; we answer them without revealing internals. */
function bodyParserAnswer(err: { type?: unknown; status?: unknown }): HttpError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new HttpError(400, 'The request body is not valid JSON.');
    case 'entity.too.large':
      return new HttpError(413, 'The request body is too large.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'The request body encoding is not supported.');
    case 'request.aborted':
      return new HttpError(400, 'The request was aborted.');
    case 'parameters.too.many':
      return new HttpError(413, 'The request has too many parameters.');
    default:
      return typeof err.status === 'number' && err.status >= 400 && err.status < 500
        ? new HttpError(err.status, 'The request could not be read.')
        : undefined;
  }
}

const { MongoNetworkError, MongoServerSelectionError, MongoNotConnectedError, MongoTopologyClosedError } = mongoose.mongo;

/**
 * A dependency being away is a 503 (retry later), not a 500 (our bug); so is a query that MongoDB
 * stopped at its maxTimeMS (known by class and code; the message is the server's to word).
 */
function isDependencyDown(err: unknown): boolean {
  return (
    (err instanceof mongoose.mongo.MongoServerError && err.code === MAX_TIME_MS_EXPIRED) ||
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof mongoose.Error.MongooseServerSelectionError ||
    isRedisUnavailable(err)
  );
}

export function notFoundHandler(): RequestHandler {
  return (_req, _res, next) => next(new NotFoundError());
}

/** The one place where errors become HTTP answers: `{message}` (+ `errors` on 422), never a stack. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    let answer: HttpError;
    if (err instanceof HttpError) answer = err;
    else if (err && typeof err === 'object' && 'type' in err && bodyParserAnswer(err)) answer = bodyParserAnswer(err)!;
    // The router throws a URIError for a route parameter that does not decode. The path guard
    // (path-guard.ts) refuses such paths first; any decoding of client text that still fails is
    // the client's mistake too, never a 500.
    else if (err instanceof URIError) answer = new MalformedPathError();
    else if (isDependencyDown(err)) {
      answer = new ServiceUnavailableError();
      (req.log ?? logger).warn({ err }, 'dependency unavailable');
    } else {
      answer = new HttpError(500, 'Server Error');
      (req.log ?? logger).error({ err }, 'unhandled error');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body: ErrorBody = { message: answer.message };
    if (answer instanceof ValidationError) body.errors = answer.errors;
    res.status(answer.status).set(answer.headers).json(body);
  };
}
