import type { OAuthPorts } from '../../infra/oauth/port.ts';
import { Repeating } from '../repeating.ts';

export const DEFAULT_OAUTH_RETENTION_EVERY_MS = 3_600_000;

/**
 * Spent and expired OAuth codes and tokens are deleted (`OAuthPorts.sweep` says which): every
 * renewal leaves a spent refresh token and an expired access token behind, 48 rows a day for an app
 * that stays connected.
 */
export class OAuthRetention {
  private readonly loop: Repeating;

  constructor(oauth: Pick<OAuthPorts, 'sweep'>, everyMs: number) {
    this.loop = new Repeating(
      'oauth retention',
      async () => {
        await oauth.sweep(new Date());
        return everyMs;
      },
      everyMs,
    );
  }

  start(): void {
    this.loop.start(5_000);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
