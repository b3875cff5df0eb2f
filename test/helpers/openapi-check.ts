import type { IncomingMessage, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { OpenApiDocument } from '../../src/app/http/openapi/document.js';

/**
 * Checks real answers against the OpenAPI document: every answer a test context's app gives
 * (test/helpers/context.ts) goes through `check`, and test/helpers/openapi-setup.ts fails the file
 * when one of them broke the document. An operation's answer must have a documented status and, for
 * JSON, a body its schema accepts; an answer no operation owns (an unknown path) must still be the
 * error shape.
 */

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface Answer {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

interface Operation {
  readonly method: string;
  readonly template: string;
  readonly pattern: RegExp;
  readonly statics: number;
}

type Json = Record<string, unknown>;

const pointer = (...parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export class OpenApiChecker {
  private readonly ajv: Ajv2020;
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly doc: OpenApiDocument) {
    // Not strict: OpenAPI adds keywords of its own (example) to JSON Schema.
    this.ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    this.ajv.addSchema({ ...(doc as unknown as Json), $id: 'openapi' });
    for (const [template, item] of Object.entries(doc.paths ?? {})) {
      const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i');
      for (const method of Object.keys(item as Json)) {
        if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) {
          this.operations.push({
            method: method.toUpperCase(),
            template,
            pattern,
            statics: template.split('/').filter((s) => s && !s.startsWith('{')).length,
          });
        }
      }
    }
    // A literal segment wins over a parameter, as in express's own routing order here.
    this.operations.sort((a, b) => b.statics - a.statics);
  }

  /** The operation that serves `method` on `path`, if the document has one. */
  operationOf(method: string, path: string): Operation | undefined {
    return this.operations.find((o) => o.method === method && o.pattern.test(path));
  }

  /** Why the answer breaks the document, or undefined when it keeps to it. */
  check(answer: Answer): string | undefined {
    // The path as express routes it: WHATWG URL parsing would resolve `.` and `..` segments,
    // which express leaves as they are (a fuzzed `/api/world/ean/.` is the EAN route's 422).
    const path = answer.url.split('?')[0] || '/';
    const op = this.operationOf(answer.method, path);
    const where = `${answer.method} ${answer.url.slice(0, 120)} → ${answer.status}`;
    let schemaRef: string | undefined;
    if (op) {
      const responsesPtr = pointer('paths', op.template, op.method.toLowerCase(), 'responses');
      const responses = this.at(responsesPtr);
      let response = responses?.[String(answer.status)] as Json | undefined;
      if (!response) return `${where}: status not documented for ${op.method} ${op.template}`;
      let responsePtr = `${responsesPtr}/${answer.status}`;
      if (typeof response.$ref === 'string') {
        responsePtr = response.$ref.slice(2);
        response = this.at(responsePtr);
      }
      const content = response?.content as Json | undefined;
      const mediaType = answer.contentType.split(';')[0]!.trim();
      if (!content) return answer.body === '' ? undefined : `${where}: a body where the document has none`;
      if (!content[mediaType]) return `${where}: ${mediaType || 'no content type'} not documented (${Object.keys(content).join(', ')})`;
      if (mediaType !== 'application/json') return undefined;
      schemaRef = `openapi#/${responsePtr}/${pointer('content', mediaType, 'schema')}`;
    } else {
      if (answer.status < 400 || !answer.contentType.startsWith('application/json')) return undefined;
      schemaRef = 'openapi#/components/schemas/Error';
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return `${where}: not JSON`;
    }
    const validate = this.validatorFor(schemaRef);
    if (validate(body)) return undefined;
    return `${where}: ${this.ajv.errorsText(validate.errors)} in ${answer.body.slice(0, 300)}`;
  }

  /**
   * Why a request this instance sent to a receiver breaks the document's `webhooks` entry `name`
   * (its headers and JSON body), or undefined when it keeps to it.
   */
  checkWebhook(name: string, request: { headers: Record<string, unknown>; body: string }): string | undefined {
    const opPtr = pointer('webhooks', name, 'post');
    const op = this.at(opPtr);
    if (!op) return `no webhook ${name} in the document`;
    for (const p of (op.parameters as Json[] | undefined) ?? []) {
      if (p.in === 'header' && p.required && request.headers[String(p.name).toLowerCase()] === undefined)
        return `${name}: header ${String(p.name)} missing`;
    }
    let body: unknown;
    try {
      body = JSON.parse(request.body);
    } catch {
      return `${name}: not JSON`;
    }
    const validate = this.validatorFor(`openapi#/${opPtr}/${pointer('requestBody', 'content', 'application/json', 'schema')}`);
    return validate(body) ? undefined : `${name}: ${this.ajv.errorsText(validate.errors)} in ${request.body.slice(0, 300)}`;
  }

  private at(ptr: string): Json | undefined {
    let node: unknown = this.doc;
    for (const part of ptr.split('/')) {
      const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
      node = node && typeof node === 'object' ? (node as Json)[key] : undefined;
    }
    return node as Json | undefined;
  }

  private validatorFor(ref: string): ValidateFunction {
    let v = this.validators.get(ref);
    if (!v) {
      v = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, v);
    }
    return v;
  }
}

/** Answers that broke the document in this test file. */
export const violations: string[] = [];

/**
 * Wraps a request handler so that each answer it gives is checked once it is sent. The body is
 * copied as it is written, so the handler and the client see the response unchanged.
 */
export function checkingAnswers(checker: OpenApiChecker, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding?: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(
        Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
      );
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return write(...args);
    }) as typeof res.write;
    res.end = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return end(...args);
    }) as typeof res.end;
    res.once('finish', () => {
      if (req.method === 'HEAD' || req.method === 'OPTIONS') return;
      const problem = checker.check({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        status: res.statusCode,
        contentType: String(res.getHeader('content-type') ?? ''),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      if (problem) violations.push(problem);
    });
    handler(req, res);
  };
}
