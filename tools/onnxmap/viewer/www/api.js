// Fetching from the viewer's JSON API (tools/onnxmap/viewer/api.md): api() with its ApiError,
// and the model summary, fetched once and shared by the pages and the top bar.

import { queryString } from './url.js';

/** An error answered by the API ({"error": message} with a non-2xx status) or by the network. */
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

/**
 * Calls /api/<path> and resolves to the parsed JSON body. Rejects with an ApiError carrying the
 * server's message when the status is not 2xx. A 2xx body is returned even when it holds an
 * "error" field (a failed statistics job reports its error that way).
 */
export async function api(path, params = {}, { method = 'GET', signal } = {}) {
  let response;
  try {
    response = await fetch(`/api/${path}${queryString(params)}`, { method, signal, headers: { Accept: 'application/json' } });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(`cannot reach the onnxmap server (${err.message})`, 0);
  }
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    if (err.name === 'AbortError') throw err;
  }
  if (!response.ok) {
    const message = body && typeof body.error === 'string' ? body.error : `${response.status} ${response.statusText}`;
    throw new ApiError(message, response.status);
  }
  if (body === null) throw new ApiError(`the answer of /api/${path} is not JSON`, response.status);
  return body;
}

let summaryPromise = null;

/** The model summary, fetched once and shared (it never changes while the server runs). */
export function getSummary() {
  if (!summaryPromise) {
    summaryPromise = api('summary');
    summaryPromise.catch(() => { summaryPromise = null; });
  }
  return summaryPromise;
}
