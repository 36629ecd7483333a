import type { SignInChallenge } from '../../domain/accounts/sign-in.ts';

/**
 * Where sign-in challenges are kept while they last (domain/accounts/sign-in.ts): short-lived
 * rows, one per code asked for, known email or not, and the mails of the known ones owed to the
 * mail process (processes/accounts/sign-in-mail.ts).
 */
export interface SignInChallengeStore {
  /**
   * One at a time per email: `decide` is given when codes were asked for this email in the last
   * hour, and the challenge it answers is stored, with its mail owed when `mail` is true, before
   * the next request for the email is decided.
   */
  issue<T>(
    email: string,
    decide: (recent: string[]) => { result: T; challenge?: SignInChallenge; mail?: boolean },
  ): Promise<T>;
  /**
   * One answer at a time per challenge: `judge` sees it (undefined when there is none) and the
   * `next` it answers is stored before the next answer is judged.
   */
  answer<T>(
    id: string,
    judge: (challenge: SignInChallenge | undefined) => Promise<{ result: T; next?: SignInChallenge }>,
  ): Promise<T>;
}
