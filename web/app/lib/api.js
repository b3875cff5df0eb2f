/* global sessionStorage, fetch */
// The page's one way to the API: relative addresses (the page is at …/app/, the API at …/api/), the
// token from this tab's sessionStorage as a Bearer header, never a cookie and never in an address.

export const TOKEN_KEY = 'shelfwatch.token';

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (value) => sessionStorage.setItem(TOKEN_KEY, value);
export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

/** An answer that was not 2xx: its status, `message`, and on 422 the fields' `errors`. */
export class ApiError extends Error {
  constructor(status, message, errors = {}) {
    super(message);
    this.status = status;
    this.errors = errors;
  }
}

let onRefused = () => {};
/** What to do when the token is refused (401): the page signs out. */
export function whenRefused(handler) {
  onRefused = handler;
}

/**
 * Calls `../api/<path>`. `body` goes as JSON; `as` is how the answer is read: json (the default),
 * blob (charts, CSV files; `{ blob, filename }`), or none.
 */
export async function api(path, { method = 'GET', body, accept = 'application/json', as = 'json' } = {}) {
  const headers = { Authorization: `Bearer ${token()}`, Accept: accept };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`../api/${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!res.ok) {
    let message = `HTTP ${res.status}`;
    let errors = {};
    try {
      const answer = await res.json();
      if (answer && typeof answer.message === 'string') message = answer.message;
      if (answer && answer.errors && typeof answer.errors === 'object') errors = answer.errors;
    } catch {
      // not JSON: the status says it
    }
    if (res.status === 401) onRefused('The token was refused: signed out.');
    throw new ApiError(res.status, message, errors);
  }
  if (as === 'none' || res.status === 204) return null;
  if (as === 'blob') {
    const named = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '');
    return { blob: await res.blob(), filename: named ? named[1] : null };
  }
  return res.json();
}

export const enc = encodeURIComponent;
