import ssh2 from 'ssh2';

/** A fresh unencrypted ed25519 private key in OpenSSH form: what a worker's configuration must point at (it parses the key at start-up). */
export const freshPrivateKey = (): string => ssh2.utils.generateKeyPairSync('ed25519').private;
