import crypto from 'node:crypto';
import { BACKUP_CODE_COUNT } from '../../domain/accounts/decide.ts';

/** Backup codes' letters: no 0/o, 1/l/i to misread. */
const BACKUP_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/**
 * What a person's codes and cookies are made of, under one server key (`server_secrets`
 * `accounts`), each purpose signing its own text:
 * - the six-digit sign-in code is derived from the challenge's id, so it is stored nowhere: the
 *   mail process makes it again to mail it, and the answer is checked against it;
 * - the session cookie is the session's id and its MAC: the id is in `SignedIn` (the audit
 *   replay prints it), the MAC is not;
 * - backup codes are kept only as MACs, never in the clear; a MAC under a key nobody outside has
 *   cannot be searched offline the way a plain hash of a short code can.
 */
export class AccountCodes {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  private mac(purpose: string, text: string): Buffer {
    return crypto.createHmac('sha256', this.#key).update(`${purpose}:${text}`).digest();
  }

  private sixDigits(purpose: string, challengeId: string): string {
    return String(this.mac(purpose, challengeId).readUInt32BE(0) % 1_000_000).padStart(6, '0');
  }

  private isCode(expectedCode: string, answer: string): boolean {
    const expected = Buffer.from(expectedCode);
    const given = Buffer.from(answer.replace(/\s+/g, ''));
    return given.length === expected.length && crypto.timingSafeEqual(given, expected);
  }

  signInCode(challengeId: string): string {
    return this.sixDigits('sign-in-code', challengeId);
  }

  /** Whether `answer` is the sign-in code of the challenge, compared in constant time. */
  isSignInCode(challengeId: string, answer: string): boolean {
    return this.isCode(this.signInCode(challengeId), answer);
  }

  /** The mailed code of a step-up challenge (its own purpose: a sign-in code never passes for it). */
  stepUpCode(challengeId: string): string {
    return this.sixDigits('step-up-code', challengeId);
  }

  isStepUpCode(challengeId: string, answer: string): boolean {
    return this.isCode(this.stepUpCode(challengeId), answer);
  }

  sessionToken(sessionId: string): string {
    return `${sessionId}.${this.mac('session', sessionId).toString('base64url')}`;
  }

  /** The session id a cookie names, or null when it is not one we made. */
  sessionIdOf(token: string): string | null {
    const [id, given, extra] = token.split('.');
    if (!id || !given || extra !== undefined) return null;
    const expected = Buffer.from(this.mac('session', id).toString('base64url'));
    const actual = Buffer.from(given);
    return expected.length === actual.length && crypto.timingSafeEqual(expected, actual) ? id : null;
  }

  /** New backup codes to show once, `xxxxx-xxxxx` (about 49 bits each). */
  newBackupCodes(): string[] {
    const codes = new Set<string>();
    while (codes.size < BACKUP_CODE_COUNT) {
      const letters = Array.from({ length: 10 }, () => BACKUP_ALPHABET[crypto.randomInt(BACKUP_ALPHABET.length)]);
      codes.add(`${letters.slice(0, 5).join('')}-${letters.slice(5).join('')}`);
    }
    return [...codes];
  }

  /** The MAC a backup code is kept as; spaces, dashes and case as typed do not matter. */
  backupCodeHash(code: string): string {
    return this.mac('backup-code', code.toLowerCase().replace(/[^a-z0-9]/g, '')).toString('base64url');
  }
}
