import { describe, expect, it } from 'vitest';
import { describeFailure, frameUrl, serverFetcher } from '../src/lab/api';
import { ServerConnection } from '@jupyterlab/services';

describe('frame endpoint', () => {
  it('builds the URL under the base URL with encoded parameters', () => {
    expect(frameUrl('http://host:8888/lab-base/', 'abc-123', '1.2.0', 0.5)).toBe(
      'http://host:8888/lab-base/gpudask/api/frame?kernel=abc-123&cursor=1.2.0&interval=0.5'
    );
    expect(frameUrl('/', '', 'a&b=c', 1)).toBe(
      '/gpudask/api/frame?kernel=&cursor=a%26b%3Dc&interval=1'
    );
  });

  it('explains failures in words', async () => {
    const missing = await describeFailure(new Response('Not Found', { status: 404 }));
    expect(missing).toContain('server extension is not enabled');
    const forbidden = await describeFailure(
      new Response(JSON.stringify({ message: "'_xsrf' argument missing" }), { status: 403 })
    );
    expect(forbidden).toContain('403');
    expect(forbidden).toContain("'_xsrf' argument missing");
  });

  it('sends requests through ServerConnection with the token, and reads frame and cursor', async () => {
    const requests: Request[] = [];
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      token: 'secret',
      fetch: async (input: RequestInfo) => {
        requests.push(input as Request);
        return new Response(JSON.stringify({ frame: { version: 1 }, cursor: 'c9' }), {
          status: 200
        });
      }
    });
    const answer = await serverFetcher(settings)('k', '', 1);
    expect(answer).toEqual({ frame: { version: 1 }, cursor: 'c9' });
    // ServerConnection adds a cache-busting number to GET requests
    expect(requests[0].url).toMatch(
      /^http:\/\/localhost:8888\/gpudask\/api\/frame\?kernel=k&cursor=&interval=1(&\d+)?$/
    );
    expect(requests[0].headers.get('Authorization')).toBe('token secret');
  });

  it('turns an error status into an error', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      fetch: async () => new Response('nope', { status: 404 })
    });
    await expect(serverFetcher(settings)('k', '', 1)).rejects.toThrow(/not enabled/);
  });
});
