// Every call the console makes: the controller's admin API on this origin (by relative URL), with the admin key from
// this tab's sessionStorage as `Authorization: Bearer` (apps/controller admin/admin-auth.ts). The
// key is never put in a cookie (sent without asking, readable by other tabs) or a URL (kept in
// history and logs); closing the tab forgets it.

const KEY_ITEM = 'gateway-admin-key';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, key);
}

/**
 * An API path (`/v1/admin/...`) as a URL relative to the page (served at `<base>/console/`), so the
 * console calls whichever origin and path served it: the controller itself, or a proxy that forwards
 * both /console and the admin API to it (proxy routes/controller-forward.ts), even under a path prefix.
 */
export function relative(path: string): string {
  return `..${path}`;
}

/** An answer other than 2xx, with the OpenAI-shaped error the API sends (code, param, message). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
    readonly param: string | null,
  ) {
    super(message);
  }
}

/** Called on any 401: the stored key no longer works, so the console goes back to its login. */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export async function request(
  method: string,
  path: string,
  body?: unknown,
  key = storedKey(),
  extraHeaders: Record<string, string> = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...extraHeaders };
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(relative(path), {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (res.ok) return res;
  const text = await res.text();
  let message = text || res.statusText;
  let code: string | null = null;
  let param: string | null = null;
  try {
    const err = JSON.parse(text).error;
    if (err) {
      message = err.message ?? message;
      code = err.code ?? null;
      param = err.param ?? null;
    }
  } catch {
    // not JSON: the text is the message
  }
  if (res.status === 401) onUnauthorized();
  throw new ApiError(res.status, message, code, param);
}

// biome-ignore lint/suspicious/noExplicitAny: pages read the API's JSON as documented in /openapi.json
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T = unknown>(path: string) => api<T>('GET', path);
export const post = <T = unknown>(path: string, body?: unknown) => api<T>('POST', path, body ?? {});
