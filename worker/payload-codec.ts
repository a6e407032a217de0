// Optional payload encryption for a Temporal server shared with others: AES-256-GCM over every payload
// the SDK encodes (workflow and activity inputs and results, signal/update/query arguments, failure
// details, memos, activity summaries) with a key only the worker and the CLI hold. Search attributes
// and headers are never encoded by the SDK (the server must read them); failure messages and stack
// traces are moved into an encrypted payload too (encodeCommonAttributes, see failure-converter.ts).
//
// Payload on the wire: metadata {encoding: binary/encrypted, encryption-cipher, encryption-key-id},
// data = IV (12 bytes) | ciphertext | GCM tag (16 bytes) of the original payload as JSON. The key id is
// a hash of the key, never the key; the additional authenticated data binds the payload to it.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { ConfigError, type ConnectionSettings } from './config.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key nobody can hold by accident: a wrong, missing or broken key (one line, exit 2, no secret in it). */
export class PayloadKeyError extends ConfigError {}

export interface PayloadKey {
  /** 16 hex digits of a hash of the key: names it in payloads and messages. */
  id: string;
  key: Buffer;
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined): string => (b ? Buffer.from(b).toString('utf8') : '');

export const payloadKeyId = (key: Buffer): string =>
  createHash('sha256').update('skewless payload key id\0').update(key).digest('hex').slice(0, 16);

/**
 * The keys in a key file: one per line, 32 bytes as base64 (`openssl rand -base64 32`) or as 64 hex
 * digits; `#` comments and blank lines are skipped. The first key encrypts; every key decrypts
 * (rotation: put the new key first, keep the old ones below while anything encrypted with them matters).
 */
export function parsePayloadKeys(content: string, where: string): PayloadKey[] {
  const keys: PayloadKey[] = [];
  content.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const key = /^[0-9a-fA-F]{64}$/.test(line)
      ? Buffer.from(line, 'hex')
      : /^[A-Za-z0-9+/]{43}=$/.test(line)
        ? Buffer.from(line, 'base64')
        : undefined;
    // The line itself is never shown: it may be a key in the wrong format.
    if (key?.length !== 32)
      throw new PayloadKeyError(
        `${where}, line ${i + 1}: not a 256-bit key (32 bytes as base64, e.g. openssl rand -base64 32, or 64 hex digits)`,
      );
    keys.push({ id: payloadKeyId(key), key });
  });
  if (keys.length === 0) throw new PayloadKeyError(`${where} holds no key (openssl rand -base64 32 > FILE makes one)`);
  return keys;
}

/** Reads the key file named by a flag or variable; errors name the file and the errno, never its content. */
export function readPayloadKeys(path: string, source: string): PayloadKey[] {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (err) {
    throw new PayloadKeyError(
      `cannot read the payload key file ${path} (${source}): ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    );
  }
  return parsePayloadKeys(content, `the payload key file ${path} (${source})`);
}

const aad = (keyId: string): Buffer => Buffer.from(`skewless payload v1 ${keyId}`);

/**
 * The codec. Without keys it encodes nothing and refuses to decode an encrypted payload with a message
 * that says how to give the key, so a process started without one fails clearly instead of showing
 * binary data. `source` names where the keys came from, for messages.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  constructor(
    private readonly keys: readonly PayloadKey[] = [],
    private readonly source = 'the payload key file',
  ) {
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  get encrypting(): PayloadKey | undefined {
    return this.keys[0];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const current = this.keys[0];
    if (!current) return payloads;
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      cipher.setAAD(aad(current.id));
      const plain = Buffer.from(
        JSON.stringify({
          metadata: Object.fromEntries(
            Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
          ),
          ...(p.data ? { data: Buffer.from(p.data).toString('base64') } : {}), // binary/null has none
        }),
      );
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: utf8(ENCRYPTED_ENCODING), 'encryption-cipher': utf8(CIPHER), 'encryption-key-id': utf8(current.id) },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (text(p.metadata?.encoding) === ENCRYPTED_ENCODING ? this.open(p) : p));
  }

  private open(p: Payload): Payload {
    const id = text(p.metadata?.['encryption-key-id']);
    const cipherName = text(p.metadata?.['encryption-cipher']);
    if (this.keys.length === 0) {
      throw new PayloadKeyError(
        `payloads are encrypted (key ${id || 'unknown'}): give the key file with --payload-key-file or SKEWLESS_PAYLOAD_KEY_FILE`,
      );
    }
    if (cipherName !== CIPHER)
      throw new PayloadKeyError(`a payload is encrypted with ${JSON.stringify(cipherName.slice(0, 40))}, not ${CIPHER}`);
    const key = this.byId.get(id);
    if (!key)
      throw new PayloadKeyError(
        `a payload is encrypted with key ${id || 'unknown'}, which ${this.source} does not hold (it holds ${[...this.byId.keys()].join(', ')})`,
      );
    const data = Buffer.from(p.data ?? new Uint8Array());
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(aad(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      const inner = JSON.parse(plain.toString('utf8')) as { metadata: Record<string, string>; data?: string };
      return {
        metadata: Object.fromEntries(Object.entries(inner.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))])),
        ...(inner.data === undefined ? {} : { data: new Uint8Array(Buffer.from(inner.data, 'base64')) }),
      };
    } catch {
      throw new PayloadKeyError(`a payload encrypted with key ${id} does not authenticate: it was altered or is corrupt`);
    }
  }
}

type ProtoPayload = { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null };
const isEncrypted = (v: unknown): v is ProtoPayload => {
  const m = (v as ProtoPayload | null)?.metadata;
  return typeof m === 'object' && m !== null && m.encoding instanceof Uint8Array && text(m.encoding) === ENCRYPTED_ENCODING;
};

/**
 * Decrypts, in place, every encrypted payload in raw protos the SDK does not decode for us (fetched
 * history events), and puts back each failure's message and stack trace from its encoded attributes.
 */
export async function decodeEncryptedPayloads(root: unknown, codec: PayloadCodec): Promise<void> {
  const seen = new Set<unknown>();
  const walk = async (v: unknown): Promise<void> => {
    if (typeof v !== 'object' || v === null || v instanceof Uint8Array || seen.has(v)) return;
    seen.add(v);
    if (isEncrypted(v)) {
      const [plain] = await codec.decode([v as Payload]);
      Object.assign(v, { metadata: plain?.metadata ?? {}, data: plain?.data ?? new Uint8Array() });
      return;
    }
    for (const child of Object.values(v)) await walk(child);
    const failure = v as { encodedAttributes?: ProtoPayload | null; message?: string | null; stackTrace?: string | null };
    if (failure.encodedAttributes?.data && text(failure.encodedAttributes.metadata?.encoding) === 'json/plain') {
      try {
        const attrs = JSON.parse(text(failure.encodedAttributes.data)) as { message?: unknown; stack_trace?: unknown };
        if (typeof attrs.message === 'string') failure.message = attrs.message;
        if (typeof attrs.stack_trace === 'string') failure.stackTrace = attrs.stack_trace;
      } catch {
        // not the SDK's schema: leave the failure as it is
      }
    }
  };
  await walk(root);
}

/** The codec for a process's connection settings (reads the key file now: a bad one fails at startup). */
export function payloadCodec(settings: Pick<ConnectionSettings, 'payloadKeyFile'>): AesGcmPayloadCodec {
  const file = settings.payloadKeyFile;
  if (!file) return new AesGcmPayloadCodec();
  return new AesGcmPayloadCodec(readPayloadKeys(file.value, file.source), `the payload key file ${file.value} (${file.source})`);
}

/** The worker's data converter: the codec, and with a key, failure messages encrypted too. */
export function workerDataConverter(codec: AesGcmPayloadCodec): DataConverter {
  return { payloadCodecs: [codec], ...(codec.encrypting ? { failureConverterPath } : {}) };
}

/** Compiled next to this file; a workflow bundle built for an encrypting worker must be given it too. */
export const failureConverterPath = fileURLToPath(new URL('./failure-converter.js', import.meta.url));
