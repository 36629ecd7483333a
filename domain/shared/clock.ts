/** Time enters the domain only through commands; this is the type the edges provide it as. */
export type Instant = string;

export function isoNow(): Instant {
  return new Date().toISOString();
}
