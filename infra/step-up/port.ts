import type { Seen, StepUpChallenge } from '../../domain/step-up/rules.ts';

/** What one decision about a person's step-up sees and changes, inside one transaction. */
export interface StepUpTurn {
  /** The app's challenges and the person's wrong codes of the last 24 hours, and the app's latest challenge. */
  seen(clientId: string): Promise<Seen>;
  /** Stores a new challenge; the app's earlier one for the person ends. */
  open(challenge: StepUpChallenge): Promise<void>;
  /** Takes back a challenge opened in this turn whose code could not be sent: it counts against nothing. */
  withdraw(challengeId: string): Promise<void>;
  /** Ends the app's challenge for the person, whatever its state: none is waiting afterwards. */
  endAll(clientId: string): Promise<void>;
  /** A wrong code: counted against the challenge and the person's 24 hours. */
  wrong(challenge: StepUpChallenge, tries: number, at: string): Promise<void>;
  /** A code that matched: the challenge is used up. */
  use(challengeId: string, at: string): Promise<void>;
}

/**
 * Where step-up challenges, wrong codes and elevations are kept (infra/step-up/postgres.ts). A
 * person's turns run one at a time across all their apps, so the budgets (per app and per person)
 * hold under concurrent requests.
 */
export interface StepUpStore {
  turn<T>(userId: string, work: (turn: StepUpTurn) => Promise<T>): Promise<T>;
  /** The app may make sensitive changes for the person until `until` (an earlier end is kept if later). */
  elevate(clientId: string, userId: string, until: string): Promise<string>;
  /** The person's apps elevated now, by client id: until when. */
  elevationsOf(userId: string): Promise<Map<string, string>>;
}
