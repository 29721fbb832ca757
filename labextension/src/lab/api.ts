/** The server's frame endpoint: GET {baseUrl}FRAME_ROUTE?kernel=&cursor=&interval=. */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { FRAME_ROUTE } from '../view/protocol.generated';
import { FetchFrame, FrameResponse, errorText } from './poller';

export function frameUrl(
  baseUrl: string,
  kernel: string,
  cursor: string,
  interval: number
): string {
  const query = new URLSearchParams({ kernel, cursor, interval: String(interval) });
  return `${URLExt.join(baseUrl, FRAME_ROUTE)}?${query.toString()}`;
}

/** Why a request failed, in words a user can act on. */
export async function describeFailure(response: Response): Promise<string> {
  let detail = '';
  try {
    const body = (await response.json()) as { message?: unknown; reason?: unknown };
    const text = body.message || body.reason;
    detail = typeof text === 'string' && text ? `: ${text}` : '';
  } catch {
    // not JSON (a proxy's page): the status says enough
  }
  switch (response.status) {
    case 404:
      return (
        `The gpudask-jupyter server extension is not enabled (404 from /${FRAME_ROUTE}): ` +
        'install gpudask-jupyter where the Jupyter server runs and restart the server.'
      );
    case 403:
      return `The server refused the request (403 Forbidden${detail}): reload the page to log in again.`;
    default:
      return `The server answered ${response.status} ${response.statusText}${detail}`.trim();
  }
}

/** Fetches frames through ServerConnection, so that the token and XSRF cookie are sent. */
export function serverFetcher(
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): FetchFrame {
  return async (kernel, cursor, interval) => {
    const url = frameUrl(settings.baseUrl, kernel, cursor, interval);
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, { method: 'GET' }, settings);
    } catch (error) {
      throw new Error(`Cannot reach the Jupyter server: ${errorText(error)}`, { cause: error });
    }
    if (!response.ok) {
      throw new Error(await describeFailure(response));
    }
    const body = (await response.json()) as Partial<FrameResponse> | null;
    if (!body || typeof body.cursor !== 'string' || !('frame' in body)) {
      throw new Error('The server answered without a frame: gpudask-jupyter versions differ?');
    }
    return { frame: body.frame, cursor: body.cursor };
  };
}
