/**
 * The vault's master key in tests: fixed, so every system a test opens on one database (a second
 * server, a child process, the CLI) opens the vault the first one filled.
 */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
