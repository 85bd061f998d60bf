// The admin API from the page: same origin, the operator's token as the bearer header.

const TOKEN_KEY = 'trajgate.adminToken';
const TIMEOUT_MS = 5_000;
/** A busy API (429) is asked again after its Retry-After, this many times. */
const BUSY_RETRIES = 3;

/** No token, or the API refused it (401). */
export class Unauthorized extends Error {}

/** The API did not answer: connection refused, timed out, or a gateway in front said 502-504. */
export class Down extends Error {}

/** The API answered with an error of its own (`{"error":{"code","message"}}`). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The token lives in sessionStorage: gone with the tab, never in the page's URL or markup. */
export const token = {
  get(): string | null {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set(value: string): void {
    sessionStorage.setItem(TOKEN_KEY, value);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** One fetch of the API; a network failure or timeout is `Down`. */
async function send(
  method: string,
  path: string,
  bearer: string,
  body: unknown,
): Promise<Response> {
  try {
    return await fetch(path, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      cache: 'no-store',
      credentials: 'omit',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new Down(err instanceof Error ? err.message : String(err));
  }
}

export async function call<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const bearer = token.get();
  if (bearer === null) throw new Unauthorized('no admin token');
  let res = await send(method, path, bearer, body);
  for (let i = 0; res.status === 429 && i < BUSY_RETRIES; i++) {
    const seconds = Math.min(5, Number(res.headers.get('retry-after')) || 1);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    res = await send(method, path, bearer, body);
  }
  if (res.status === 401) throw new Unauthorized('the admin API refused the token');
  if (res.status === 502 || res.status === 503 || res.status === 504)
    throw new Down(`HTTP ${res.status}`);
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    if (res.ok) throw new ApiFailure(res.status, 'E_NOT_JSON', 'the API answered with no JSON');
    json = null;
  }
  if (!res.ok) {
    const error = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    throw new ApiFailure(
      res.status,
      typeof error?.code === 'string' ? error.code : `HTTP_${res.status}`,
      typeof error?.message === 'string' ? error.message : `HTTP ${res.status}`,
    );
  }
  return json as T;
}

export const sessionPath = (id: string) => `/api/sessions/${encodeURIComponent(id)}`;
