/**
 * Secrets the service must use but never show (DKIM private keys, provider keys during an
 * import). The vault (vault.ts) keeps them encrypted under the master key.
 */
export interface SecretStore {
  /** Stores `plaintext` under `id`, replacing what was there. */
  put(id: string, plaintext: string): Promise<void>;
  /** Stores `plaintext` under `id` unless one is there; answers the secret stored (the first writer's). */
  claim(id: string, plaintext: string): Promise<string>;
  /** The secret, or undefined when there is none. */
  get(id: string): Promise<string | undefined>;
  /** Removes the secret; true when there was one. */
  delete(id: string): Promise<boolean>;
}
