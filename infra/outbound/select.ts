import { CachedDns } from '../dns/cache.ts';
import type { Dns } from '../dns/port.ts';
import type { Delivery } from './delivery.ts';
import { DirectDelivery } from './direct.ts';
import { RelayDelivery } from './relay.ts';

export interface DeliveryConfig {
  /** `SMTP_RELAY_URL`: every message goes through this relay. */
  relayUrl: string | undefined;
  /** `SMTP_MX_PORT`: 25 unless a test points direct delivery at a loopback server. */
  mxPort: number;
  /** With the test port override: MX hosts may resolve to loopback and private addresses. */
  mxAllowPrivate: boolean;
  /** EHLO name for direct delivery. */
  heloName: string;
}

/** The relay when one is configured, else direct delivery to the recipients' MX hosts. */
export function openDelivery(config: DeliveryConfig, dns: Dns): Delivery {
  if (config.relayUrl) return new RelayDelivery(config.relayUrl);
  return new DirectDelivery({
    dns: new CachedDns(dns),
    heloName: config.heloName,
    port: config.mxPort,
    allowPrivateAddresses: config.mxAllowPrivate,
  });
}
