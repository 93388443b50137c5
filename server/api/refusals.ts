/**
 * Every refusal as the contract's error body ({error, code}), wherever it is decided: in a
 * handler (ApiError), in validation, in fastify (body limits, content types, the router), or
 * in Node's HTTP parser before fastify sees a request (malformed requests, oversized headers,
 * a missing Host). Statuses come from the error registry through ApiError.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { Ajv } from 'ajv';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { ApiError, apiError, badRequest, notFound, unsupported } from '../errors.js';
import type { Logger } from '../log.js';
import type { App } from './types.js';

/** Bodies above this size are refused with 413 before they are parsed. */
export const BODY_LIMIT = 64 * 1024;
/** Headers above this size are refused with 431 by Node's parser (Node's default, said once). */
export const MAX_HEADER_SIZE = 16 * 1024;

const send = (reply: FastifyReply, e: ApiError) => reply.code(e.status).headers(e.headers).send(e.body());

/** The whole HTTP response of an ApiError, for a socket that has no fastify reply. */
function rawResponse(e: ApiError): string {
  const body = JSON.stringify(e.body());
  return (
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** Why Node's parser refused a request, in words, from its error code. */
function parserReason(code: string | undefined): string {
  switch (code) {
    case 'HPE_INVALID_METHOD':
      return 'an unknown method';
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_HEADER_VALUE':
      return 'a header with a character HTTP does not allow';
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return 'both Transfer-Encoding and Content-Length, or an invalid Transfer-Encoding';
    case 'HPE_INVALID_CONTENT_LENGTH':
      return 'an invalid Content-Length';
    case 'HPE_INVALID_URL':
      return 'a character a URL may not contain (percent-encode it)';
    default:
      return code ? `parser error ${code}` : 'a malformed request';
  }
}

/**
 * fastify's `clientErrorHandler`: Node's parser refused the bytes on a connection before
 * any request existed. Answers once, with the error body, and closes that connection only.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer; a refused one may report more parse errors.
  if (err.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded) {
    if (err.code === 'ECONNRESET') socket.destroy();
    return;
  }
  const e =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? apiError(
          ERROR_CODES.headersTooLarge,
          `The request headers are larger than ${MAX_HEADER_SIZE / 1024} KiB; an API key is about 50 characters, so check what fills the Authorization and other headers.`,
        )
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? apiError(ERROR_CODES.requestTimeout, 'The request did not arrive in time; send it again.')
        : badRequest(
            `The request is not valid HTTP/1.1 (${parserReason(err.code)}); check the client or proxy that sent it.`,
          );
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // end() rather than destroy(): closing with unread input would reset the connection, and
  // a reset can discard the answer before the client reads it. A client that keeps the
  // connection open after the answer is cut off after a second.
  socket.end(rawResponse(e));
  const cutOff = setTimeout(() => socket.destroy(), 1000);
  cutOff.unref();
  socket.once('close', () => clearTimeout(cutOff));
}

/** The longest path parameter the router takes (longer: 414 uri_too_long). */
export const MAX_PARAM_LENGTH = 4096;

/** fastify's `frameworkErrors`: URLs the router cannot take, without echoing the URL. */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  void send(
    reply,
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? apiError(
          ERROR_CODES.uriTooLong,
          `A path segment is longer than ${MAX_PARAM_LENGTH} characters; no id is that long.`,
        )
      : badRequest('The URL is not valid (check its percent-encoding).'),
  );
}

type RequestPart = 'body' | 'headers' | 'params' | 'querystring';

/**
 * A route's `schemaErrorFormatter` for parts whose every possible mistake deserves the same
 * message, saying the shape that is needed (`{ body: 'input.tap needs ...' }`). Other parts
 * get the error handler's message from the validation error.
 */
export function partMessages(
  messages: Partial<Record<RequestPart, string>>,
): (errors: FastifySchemaValidationError[], part: RequestPart) => Error {
  return (_errors, part) => {
    const message = messages[part];
    return message !== undefined ? badRequest(message) : new Error(`invalid ${part}`);
  };
}

type ValidationError = FastifyError & {
  validation?: Array<{
    keyword?: string;
    params?: Record<string, unknown>;
    instancePath?: string;
    message?: string;
  }>;
};

/**
 * `translate` turns failures the app knows beyond the API's own (an API node's lost
 * database) into the error the caller should see; anything else unexpected is a 500.
 */
export function installRefusals(
  app: App,
  log: Logger,
  translate: (err: Error) => ApiError | undefined = () => undefined,
): void {
  // Bodies are validated as sent: "300" is not an integer and an unknown field is refused,
  // never stripped. Query strings and path parameters arrive as text and are coerced.
  const strict = new Ajv({ coerceTypes: false, useDefaults: false, removeAdditional: false, strict: false });
  const coercing = new Ajv({
    coerceTypes: 'array',
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema),
  );

  // JSON bodies: empty is allowed (POST /sessions has an optional body); anything that
  // does not parse is a 400 with the contract's error body.
  app.removeContentTypeParser(['application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(badRequest('The request body is not valid JSON; send a JSON object.'), undefined);
    }
  });
  // Any other content type: an empty body is no body, whatever a client's default type
  // (`fetch` sends text/plain, `curl -d ''` a form type); a body with content must be JSON.
  app.removeContentTypeParser(['text/plain']);
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    if (String(body).trim() === '') return done(null, undefined);
    done(badRequest('Send the request body as application/json.'), undefined);
  });

  // Node answers an HTTP/1.1 request without Host with an empty 400 unless told not to
  // (see the `http` option in app.ts); this says the same with the error body. It runs
  // before the credential check: such a request is not HTTP/1.1 at all.
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.headers.host === undefined && req.raw.httpVersion === '1.1') {
      return done(
        apiError(
          ERROR_CODES.invalidRequest,
          'An HTTP/1.1 request needs a Host header; send the host and port of the service.',
          {},
          { connection: 'close' },
        ),
      );
    }
    done();
  });

  app.setErrorHandler((err: ValidationError, req, reply) => {
    if (err instanceof ApiError) return send(reply, err);
    if (Array.isArray(err.validation)) {
      const first = err.validation[0];
      if (first?.keyword === 'additionalProperties') {
        const name = String(first.params?.additionalProperty ?? 'field');
        const create = req.method === 'POST' && req.routeOptions.url === '/sessions';
        return send(
          reply,
          unsupported(
            create
              ? `"${name}" is not supported in this request: raw capabilities and runtime resource overrides cannot be set; remove the field.`
              : `"${name}" is not a field of this request; remove it.`,
          ),
        );
      }
      const path = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
      const where =
        path || (err.validationContext === 'body' ? 'The body' : (err.validationContext ?? 'The request'));
      return send(reply, badRequest(`${where} ${first?.message ?? 'is invalid'}.`));
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return send(
        reply,
        apiError(
          ERROR_CODES.bodyTooLarge,
          `The request body is larger than ${BODY_LIMIT} bytes; send a smaller body.`,
        ),
      );
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return send(reply, badRequest('Send the request body as application/json.'));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return send(reply, badRequest(err.message || 'Invalid request.'));
    }
    const translated = translate(err);
    if (translated) {
      log.warn('request failed', { method: req.method, url: req.url, error: err.message });
      return send(reply, translated);
    }
    log.error('unexpected error', { method: req.method, url: req.url, error: err.stack ?? String(err) });
    return send(
      reply,
      apiError(ERROR_CODES.internal, 'Unexpected service error; retry, and report it if it persists.'),
    );
  });

  app.setNotFoundHandler((req, reply) =>
    send(reply, notFound(`No route ${req.method} ${req.url.split('?')[0]}.`)),
  );
}
